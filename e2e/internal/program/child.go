package program

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Child is the suite's test binary run again in a child process that a
// spec can SIGKILL, running one test function only (which does nothing
// unless its environment says it is the child). The child writes each
// line of its stdout with one write: a write of less than PIPE_BUF bytes
// to a pipe is atomic, so the parent never reads half a line, even after
// a SIGKILL.
type Child struct {
	Cmd   *exec.Cmd
	Stdin io.WriteCloser
	// Read is closed when stdout is read to its end (the child exited).
	Read   <-chan struct{}
	stderr bytes.Buffer
}

// StartChild runs the test function named test of the running test
// binary in a child process, with env added to the environment, and
// calls line with each line of its stdout, in order, on one goroutine.
// When the spec ends, a child still running is killed, and when the spec
// failed, its stderr is printed.
func StartChild(test string, env []string, line func(string)) *Child {
	GinkgoHelper()
	read := make(chan struct{})
	ch := &Child{Read: read}
	ch.Cmd = exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.timeout=10m")
	ch.Cmd.Env = append(os.Environ(), env...)
	ch.Cmd.Stderr = &ch.stderr
	var err error
	ch.Stdin, err = ch.Cmd.StdinPipe()
	Expect(err).NotTo(HaveOccurred())
	stdout, err := ch.Cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	Expect(ch.Cmd.Start()).To(Succeed())
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line(sc.Text())
		}
	}()
	DeferCleanup(func() {
		if ch.Cmd.ProcessState == nil {
			_ = ch.Cmd.Process.Kill()
			<-read
			_ = ch.Cmd.Wait()
		}
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Printf("child %s: stderr:\n%s\n", ch.Cmd.ProcessState, ch.Stderr())
		}
	})
	return ch
}

// Stderr is what the child wrote to stderr; call it once the child has
// exited.
func (ch *Child) Stderr() string { return ch.stderr.String() }

// Kill SIGKILLs the child and waits for it.
func (ch *Child) Kill() {
	GinkgoHelper()
	Expect(ch.Cmd.Process.Kill()).To(Succeed())
	<-ch.Read
	Expect(ch.Cmd.Wait()).To(HaveOccurred(), "a SIGKILLed child does not exit 0")
	Expect(ch.Cmd.ProcessState.String()).To(ContainSubstring("killed"), "stderr: %s", ch.Stderr())
}

// Finish closes the child's stdin and waits for it to exit 0.
func (ch *Child) Finish() {
	GinkgoHelper()
	Expect(ch.Stdin.Close()).To(Succeed())
	<-ch.Read
	Expect(ch.Cmd.Wait()).To(Succeed(), "stderr: %s", ch.Stderr())
}
