package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Our changes to the pinned QuickJS-ng are unified diffs in guests/quickjs/src/patches, applied
// in name order to the extracted sources before compiling. The applier is strict: every hunk
// must match the source exactly where it says, so a patch never lands somewhere else silently.

// filePatch is one file's changes in a patch.
type filePatch struct {
	path  string // relative to the source directory
	hunks []hunk
}

// hunk is one "@@ -a,b +c,d @@" block: lines start with ' ', '-' or '+'.
type hunk struct {
	oldStart, oldLines, newLines int
	lines                        []string
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// parsePatch reads a unified diff.
func parsePatch(text []byte) ([]filePatch, error) {
	lines := strings.SplitAfter(string(text), "\n")
	var files []filePatch
	for i := 0; i < len(lines); {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, "--- "):
			if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "+++ ") {
				return nil, fmt.Errorf("line %d: --- without +++", i+1)
			}
			path, err := patchPath(lines[i+1])
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", i+2, err)
			}
			files = append(files, filePatch{path: path})
			i += 2
		case strings.HasPrefix(line, "@@"):
			if len(files) == 0 {
				return nil, fmt.Errorf("line %d: hunk before any file header", i+1)
			}
			h, next, err := parseHunk(lines, i)
			if err != nil {
				return nil, err
			}
			f := &files[len(files)-1]
			f.hunks = append(f.hunks, h)
			i = next
		default:
			i++ // prose before a file header, as git writes it
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no file in the patch")
	}
	return files, nil
}

// patchPath reads "+++ b/dir/file.c" (a timestamp after a tab allowed) as dir/file.c.
func patchPath(line string) (string, error) {
	p := strings.TrimSuffix(strings.TrimPrefix(line, "+++ "), "\n")
	p, _, _ = strings.Cut(p, "\t")
	p = strings.TrimPrefix(p, "b/")
	if p == "" || !filepath.IsLocal(p) {
		return "", fmt.Errorf("file %q is not a path inside the sources", p)
	}
	return p, nil
}

func parseHunk(lines []string, at int) (hunk, int, error) {
	m := hunkHeader.FindStringSubmatch(lines[at])
	if m == nil {
		return hunk{}, 0, fmt.Errorf("line %d: bad hunk header %q", at+1, strings.TrimSpace(lines[at]))
	}
	count := func(s string) int {
		if s == "" {
			return 1
		}
		n, _ := strconv.Atoi(s)
		return n
	}
	if len(m[1]) > 9 || len(m[2]) > 9 || len(m[4]) > 9 {
		return hunk{}, 0, fmt.Errorf("line %d: hunk header out of range", at+1)
	}
	h := hunk{oldLines: count(m[2]), newLines: count(m[4])}
	h.oldStart, _ = strconv.Atoi(m[1])
	old, new := 0, 0
	i := at + 1
	for ; i < len(lines) && (old < h.oldLines || new < h.newLines); i++ {
		line := lines[i]
		if line == "" || !strings.HasSuffix(line, "\n") {
			return hunk{}, 0, fmt.Errorf("line %d: hunk ends early (a file without a final newline is not supported)", i+1)
		}
		switch line[0] {
		case ' ':
			old, new = old+1, new+1
		case '-':
			old++
		case '+':
			new++
		default:
			return hunk{}, 0, fmt.Errorf("line %d: %q in a hunk", i+1, line[0])
		}
		h.lines = append(h.lines, line)
	}
	if old != h.oldLines || new != h.newLines {
		return hunk{}, 0, fmt.Errorf("line %d: hunk has %d old and %d new lines, header says %d and %d", at+1, old, new, h.oldLines, h.newLines)
	}
	return h, i, nil
}

// apply applies hunks (in order) to src; each must match exactly at its stated line.
func apply(src []byte, hunks []hunk) ([]byte, error) {
	lines := strings.SplitAfter(string(src), "\n")
	var out []string
	pos := 0 // index into lines of the next line not yet copied
	for n, h := range hunks {
		start := h.oldStart - 1
		if h.oldLines == 0 {
			start = h.oldStart // an insertion names the line after which it goes
		}
		if start < pos || start > len(lines) {
			return nil, fmt.Errorf("hunk %d: line %d is out of order or past the end", n+1, h.oldStart)
		}
		out = append(out, lines[pos:start]...)
		pos = start
		for _, l := range h.lines {
			switch l[0] {
			case ' ', '-':
				if pos >= len(lines) || lines[pos] != l[1:] {
					return nil, fmt.Errorf("hunk %d (line %d): the source differs at line %d", n+1, h.oldStart, pos+1)
				}
				if l[0] == ' ' {
					out = append(out, l[1:])
				}
				pos++
			case '+':
				out = append(out, l[1:])
			}
		}
	}
	out = append(out, lines[pos:]...)
	return []byte(strings.Join(out, "")), nil
}

// applyPatches applies every *.patch of dir, in name order, to the files under srcDir.
func applyPatches(dir, srcDir string) error {
	names, err := filepath.Glob(filepath.Join(dir, "*.patch"))
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		text, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		files, err := parsePatch(text)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(name), err)
		}
		for _, f := range files {
			path := filepath.Join(srcDir, f.path)
			src, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("%s: %w", filepath.Base(name), err)
			}
			if src, err = apply(src, f.hunks); err != nil {
				return fmt.Errorf("%s: %s: %w", filepath.Base(name), f.path, err)
			}
			if err := os.WriteFile(path, src, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
