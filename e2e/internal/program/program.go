// Package program builds a command of the repository and runs it for the
// e2e suites that test programs (the keyroute command, the load
// generator): exit code, stdout and stderr, with the run written to
// GinkgoWriter.
package program

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Build builds the repository's package pkg (e.g. "./cmd/keyroute") into
// dir and returns the binary's path, failing the suite if it does not
// build. Call it from BeforeSuite; the working directory is a suite's
// (two levels below the repository's root).
func Build(pkg, dir string) string {
	bin := filepath.Join(dir, filepath.Base(pkg))
	root, err := filepath.Abs(filepath.Join("..", ".."))
	Expect(err).NotTo(HaveOccurred())
	t0 := time.Now()
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = root
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build %s:\n%s", pkg, out)
	GinkgoWriter.Printf("built %s in %s\n", bin, time.Since(t0).Round(time.Millisecond))
	return bin
}

// Run is one run of a program.
type Run struct {
	// Bin is the program, Dir its working directory.
	Bin, Dir string
	// Env holds variables added to the suite's environment.
	Env []string
	// Stdin is the program's standard input.
	Stdin string
	// StderrLines is how many of the last lines of stderr the log shows
	// (0: all).
	StderrLines int
}

// Outcome is what a run produced.
type Outcome struct {
	Code           int
	Stdout, Stderr string
}

// Exec runs the program with args, bounded by ctx, and returns its exit
// code and output; a program that cannot be started fails the spec.
func (r Run) Exec(ctx context.Context, args ...string) Outcome {
	GinkgoWriter.Printf("$ %s%s %s\n", envText(r.Env), filepath.Base(r.Bin), strings.Join(args, " "))
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, r.Bin, args...)
	cmd.Dir = r.Dir
	cmd.Env = append(os.Environ(), r.Env...)
	cmd.Stdin = strings.NewReader(r.Stdin)
	cmd.WaitDelay = 30 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else {
		Expect(err).NotTo(HaveOccurred())
	}
	GinkgoWriter.Printf("exit %d after %s\n--- stdout\n%s--- stderr\n%s\n", code,
		time.Since(t0).Round(time.Millisecond), stdout.String(), tail(stderr.String(), r.StderrLines))
	return Outcome{Code: code, Stdout: stdout.String(), Stderr: stderr.String()}
}

func envText(env []string) string {
	if len(env) == 0 {
		return ""
	}
	return strings.Join(env, " ") + " "
}

// tail returns the last n lines of s (all with n 0).
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if n > 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
