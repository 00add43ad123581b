// Command plimsoll-specgen reads one OpenAPI 3.0 or 3.1 document and writes what a plimsoll run
// needs for that API: the route list, a JavaScript client preamble, the tool description, the
// one-line health file and a grant profile.
//
//	plimsoll-specgen [-emit routes|preamble|python|description|health|profile|all] [-o DIR] [-lang js]
//	                 [-name NAME] [-methods GET,HEAD] [-tags T,...] [-exclude T,...]
//	                 [-allow-file-refs] SPEC
//
// Exit status: 0 done; 1 an I/O error; 2 a usage error, a document that cannot be used, or a
// misused x-plimsoll-health-check.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/plimsoll/plimsoll/preamble/apigen"
)

const usageText = `usage: plimsoll-specgen [-emit routes|preamble|python|description|health|profile|all] [-o DIR]
                        [-lang js] [-name NAME] [-methods GET,HEAD] [-tags T,...]
                        [-exclude T,...] [-allow-file-refs] SPEC

Reads one OpenAPI 3.0 or 3.1 document (YAML or JSON) and writes, from it alone:
  routes       the profile's route list: one "METHOD /path" line per operation, {param} as *
  preamble     a JavaScript client: api.getPet({petId: 42, ...query, body: {...}}), plus
               api.search("text") and api.describe("fn") to find functions from the tool
  python       the same client for Python tools: await api.get_pet(petId=42, body={...}),
               api.search("text") and api.describe("get_pet") on the same index
  description  the tool description an agent's model reads: every function when the listing
               fits 2,500 tokens, else an index (groups, how to search) within 1,500
  health       the health_check line, only when one GET operation is tagged
               x-plimsoll-health-check: true (a path named /status is not enough)
  profile      a grant profile skeleton (YAML)
  all          all of the above into DIR: NAME.routes, NAME.preamble.js, NAME.preamble.py,
               NAME.description.txt, NAME.health (when tagged) and NAME.yaml, which names both
               preambles and the description (the MCP tool's text for this API) (default)

-methods, -tags and -exclude keep only some operations, for every kind: -methods GET,HEAD is a
read-only grant; -tags keeps operations with one of the tags, then -exclude drops those with any
of its tags. A method or tag the document does not have is refused by name.

One kind goes to stdout, or with -o DIR into DIR/NAME.<kind>; -emit all writes into -o DIR
(default: the current directory). NAME is the profile's name: letters, digits, '-' and '_',
starting with a letter or digit, at most 64 characters. Unless -name gives it, it is
info.x-plimsoll-name, else the API's domain (https://api.github.com gives github), else words of
info.title.

Exit status: 0 done; 1 I/O error; 2 usage error, unusable document or misused health tag.

Flags:
`

var kinds = []string{"routes", "preamble", "python", "description", "health", "profile", "all"}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// usageError is a bad command line: exit 2, with a pointer to -h.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plimsoll-specgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	emit := fs.String("emit", "all", "what to write: "+strings.Join(kinds, ", "))
	outDir := fs.String("o", "", "directory to write into (default: stdout for one kind, . for all)")
	lang := fs.String("lang", "js", "preamble language; only js")
	name := fs.String("name", "", "the profile's `NAME`: base name of the written files and of NAME_TOKEN (default: from the document; see above)")
	fileRefs := fs.Bool("allow-file-refs", false, "let $ref read other local files (never URLs)")
	methods := fs.String("methods", "", "keep only operations of these comma-separated `METHODS`, e.g. GET,HEAD")
	tags := fs.String("tags", "", "keep only operations with one of these comma-separated `TAGS`")
	exclude := fs.String("exclude", "", "drop operations with any of these comma-separated `TAGS`")
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}

	// Flags may come before or after SPEC.
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2 // flag has printed the problem and the usage
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}

	err := generate(stdout, stderr, options{
		emit: *emit, outDir: *outDir, lang: *lang, name: *name, fileRefs: *fileRefs, args: positional,
		filter: apigen.Filter{Methods: commaList(*methods), Tags: commaList(*tags), Exclude: commaList(*exclude)},
	})
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, message(err))
	var ue usageError
	var fe *apigen.FilterError
	switch {
	case errors.As(err, &fe):
		return 2
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "run plimsoll-specgen -h for usage")
		return 2
	case errors.Is(err, apigen.ErrHealthTag), errors.Is(err, apigen.ErrInvalidDocument):
		return 2
	}
	return 1
}

// message prefixes errors that do not already name the generator.
func message(err error) string {
	if s := err.Error(); strings.HasPrefix(s, "specgen: ") {
		return s
	}
	return "specgen: " + err.Error()
}

type options struct {
	emit, outDir, lang, name string
	fileRefs                 bool
	args                     []string
	filter                   apigen.Filter
}

// commaList splits a flag's comma-separated values, leaving out empty ones.
func commaList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func generate(stdout, stderr io.Writer, o options) error {
	switch {
	case len(o.args) == 0:
		return usageError{"specgen: no SPEC given"}
	case len(o.args) > 1:
		return usageError{fmt.Sprintf("specgen: one SPEC only, got %d: %s", len(o.args), strings.Join(o.args, " "))}
	case !contains(kinds, o.emit):
		return usageError{fmt.Sprintf("specgen: -emit %q: want one of %s", o.emit, strings.Join(kinds, ", "))}
	case o.lang != "js":
		return usageError{fmt.Sprintf("specgen: -lang %q: only js is supported", o.lang)}
	case o.name != "" && !apigen.ValidName(o.name):
		return usageError{fmt.Sprintf("specgen: -name %q: use letters, digits, '-' and '_' only", o.name)}
	}

	spec, err := apigen.Loader{AllowFileRefs: o.fileRefs}.Load(o.args[0])
	if err != nil {
		return err
	}
	if err := spec.Filter(o.filter); err != nil {
		return err
	}
	for _, w := range spec.Warnings() {
		fmt.Fprintln(stderr, w)
	}
	// A misused health tag fails every kind: the document is wrong, and a guess is worse.
	health, tagged, err := spec.Health()
	if err != nil {
		return err
	}
	name := o.name
	if name == "" {
		name = spec.Name()
	}

	if o.emit == "all" {
		dir := o.outDir
		if dir == "" {
			dir = "."
		}
		if err := apigen.WriteAll(spec, dir, name); err != nil {
			return err
		}
		n := 5
		if tagged {
			n = 6
		}
		fmt.Fprintf(stderr, "specgen: wrote %d files for %s into %s\n", n, name, dir)
		return nil
	}

	files := apigen.FilesFor(name)
	var text, file string
	switch o.emit {
	case "routes":
		text, file = strings.Join(spec.Routes(), "\n")+"\n", files.Routes
	case "preamble":
		if text, err = spec.Preamble(); err != nil {
			return err
		}
		file = files.Preamble
	case "python":
		if text, err = spec.PythonClient(); err != nil {
			return err
		}
		file = files.Python
	case "description":
		text, file = spec.Description(), files.Description
	case "health":
		file = files.Health
		if !tagged {
			fmt.Fprintln(stderr, "specgen: no operation is tagged x-plimsoll-health-check: true; no health file written")
			if o.outDir != "" {
				if err := os.Remove(filepath.Join(o.outDir, file)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
			}
			return nil
		}
		text = health + "\n"
	case "profile":
		p, err := spec.Profile(apigen.ProfileOptions{Name: name})
		if err != nil {
			return err
		}
		text, file = string(p), files.Profile
	}
	if o.outDir == "" {
		_, err := io.WriteString(stdout, text)
		return err
	}
	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return err
	}
	return apigen.WriteFile(filepath.Join(o.outDir, file), []byte(text))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
