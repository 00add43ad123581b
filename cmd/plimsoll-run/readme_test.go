package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A README block marked runnable is run as written, top to bottom, in one session: a command
// ending in & keeps running (the next command waits until it says "listening"), `export N=V`
// sets the session's environment, and every other command must exit 0. The block's stdout must
// contain each expect='…' of its marker. Only the ports are moved to free ones, so the test does
// not collide with a daemon of the machine's user or a second copy of itself.
var (
	runnableMarker = regexp.MustCompile(`^<!-- runnable((?: expect='[^']*')*) -->$`)
	expectAttr     = regexp.MustCompile(`expect='([^']*)'`)
	backgrounded   = regexp.MustCompile(`^(.*?)\s+&\s*(#.*)?$`)
	exported       = regexp.MustCompile(`^export ([A-Z_][A-Z0-9_]*)=(\S+)\s*(#.*)?$`)
)

type readmeBlock struct {
	line     int // of the marker, for messages
	commands []string
	expect   []string
}

// readmeBlocks returns the README's runnable blocks with their continuation lines joined.
func readmeBlocks(t *testing.T, text string) []readmeBlock {
	t.Helper()
	var blocks []readmeBlock
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		m := runnableMarker.FindStringSubmatch(lines[i])
		if m == nil {
			require.NotContains(t, lines[i], "<!-- runnable", "README line %d: a malformed runnable marker", i+1)
			continue
		}
		require.Less(t, i+1, len(lines), "README line %d: a marker at the end", i+1)
		require.Equal(t, "```sh", lines[i+1], "README line %d: a runnable marker must sit right above a ```sh block", i+1)
		b := readmeBlock{line: i + 1}
		for _, e := range expectAttr.FindAllStringSubmatch(m[1], -1) {
			b.expect = append(b.expect, e[1])
		}
		var cmd strings.Builder
		for i += 2; i < len(lines) && lines[i] != "```"; i++ {
			if strings.HasSuffix(lines[i], "\\") {
				cmd.WriteString(strings.TrimSuffix(lines[i], "\\"))
				continue
			}
			cmd.WriteString(lines[i])
			if s := strings.TrimSpace(cmd.String()); s != "" {
				b.commands = append(b.commands, s)
			}
			cmd.Reset()
		}
		blocks = append(blocks, b)
	}
	return blocks
}

func TestREADMERunnableBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("installs the commands and runs the README's blocks")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	text, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	blocks := readmeBlocks(t, string(text))
	require.GreaterOrEqual(t, len(blocks), 4, "the quick start's blocks are marked runnable")

	s := newReadmeSession(t, root)
	for _, b := range blocks {
		var out bytes.Buffer
		for _, c := range b.commands {
			s.run(t, b.line, c, &out)
		}
		for _, want := range b.expect {
			require.Contains(t, out.String(), want, "README block at line %d: its output lacks %q", b.line, want)
		}
	}
}

// readmeSession is a shell session as a reader of the README has it, with the ports moved.
type readmeSession struct {
	root  string
	env   []string
	moves *strings.Replacer
	bg    []background
}

type background struct {
	cmd    *exec.Cmd
	exited chan error
}

func newReadmeSession(t *testing.T, root string) *readmeSession {
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	apiAddr, daemonAddr, adminAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	profileDir := filepath.Join(tmp, "profiles")
	copyExampleProfiles(t, filepath.Join(root, "examples", "profiles"), profileDir, apiAddr)
	s := &readmeSession{root: root, moves: strings.NewReplacer(
		"plimsoll-run example-api", "plimsoll-run example-api --listen "+apiAddr,
		"localhost:7070", daemonAddr, "127.0.0.1:7070", daemonAddr,
		"examples/profiles", profileDir,
	)}
	s.env = append(os.Environ(), "GOBIN="+bin, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PLIMSOLL_LISTEN="+daemonAddr, "PLIMSOLL_ADMIN="+adminAddr, "PLIMSOLL_PROFILES="+profileDir)
	t.Cleanup(s.stop)
	return s
}

// freeAddr is a loopback address no one listens on now. It is on a random address of 127/8, not
// 127.0.0.1, so that the port, free when chosen and bound later, cannot be taken meanwhile by the
// outgoing connections of other tests on this machine (their source address is 127.0.0.1).
func freeAddr(t *testing.T) string {
	ip := net.IPv4(127, byte(1+rand.IntN(254)), byte(rand.IntN(256)), byte(1+rand.IntN(254)))
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// copyExampleProfiles copies the example profiles, pointing them at the example API's port.
func copyExampleProfiles(t *testing.T, from, to, apiAddr string) {
	require.NoError(t, os.MkdirAll(to, 0o755))
	entries, err := os.ReadDir(from)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		require.NoError(t, err)
		b = bytes.ReplaceAll(b, []byte(exampleAPIListen), []byte(apiAddr))
		require.NoError(t, os.WriteFile(filepath.Join(to, e.Name()), b, 0o600))
	}
}

func (s *readmeSession) run(t *testing.T, line int, command string, out io.Writer) {
	t.Helper()
	if m := exported.FindStringSubmatch(command); m != nil {
		s.env = append(s.env, m[1]+"="+m[2])
		return
	}
	if m := backgrounded.FindStringSubmatch(command); m != nil {
		s.start(t, line, s.moves.Replace(m[1]))
		return
	}
	cmd := s.shell(s.moves.Replace(command))
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	require.NoError(t, cmd.Run(), "README block at line %d: %s\nstderr: %s", line, command, stderr.String())
}

func (s *readmeSession) shell(command string) *exec.Cmd {
	cmd := exec.Command("bash", "-o", "pipefail", "-c", command)
	cmd.Dir, cmd.Env = s.root, s.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // stopped with everything it started
	return cmd
}

// start runs command in the background and waits until it reports listening. The wait is bounded
// only so a broken command fails the test instead of hanging it: no verdict rests on its length.
func (s *readmeSession) start(t *testing.T, line int, command string) {
	t.Helper()
	cmd := s.shell(command)
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	require.NoError(t, cmd.Start(), "README block at line %d: %s", line, command)
	exited := make(chan error, 1)
	s.bg = append(s.bg, background{cmd, exited})
	var log lockedBuffer
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(r)
		once := sync.Once{}
		for sc.Scan() {
			fmt.Fprintln(&log, sc.Text())
			if strings.Contains(sc.Text(), "listening") {
				once.Do(func() { close(listening) })
			}
		}
	}()
	go func() { err := cmd.Wait(); w.Close(); exited <- err }()
	select {
	case <-listening:
	case err := <-exited:
		exited <- err // for stop
		t.Fatalf("README block at line %d: %s ended (%v) before listening:\n%s", line, command, err, log.String())
	case <-time.After(5 * time.Minute):
		t.Fatalf("README block at line %d: %s did not listen within 5 minutes:\n%s", line, command, log.String())
	}
}

// stop ends the background commands as `kill %1 %2` would, and waits for them.
func (s *readmeSession) stop() {
	for _, b := range s.bg {
		syscall.Kill(-b.cmd.Process.Pid, syscall.SIGTERM)
	}
	for _, b := range s.bg {
		select {
		case <-b.exited:
		case <-time.After(time.Minute): // a daemon that ignores SIGTERM must not outlive the test
			syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
			<-b.exited
		}
	}
}
