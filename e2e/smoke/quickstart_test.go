//go:build e2e

package smoke

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/e2e/internal/program"
	"github.com/keyroute/keyroute/topology"
)

// README.md marks the quick start's blocks with these comments, each on
// the line before the block's opening fence (readme_test.go in the root
// checks the topology and the Go program against the code).
const (
	readmeTopologyMark = "<!-- topology example: loaded by readme_test.go, run by e2e/smoke -->"
	readmeTopicMark    = "<!-- quick start topic: run by e2e/smoke -->"
	readmeProgramMark  = "<!-- quick start: example_quickstart_test.go, run by e2e/smoke -->"
)

// The README's local cluster is a Pulsar standalone on its default ports.
// The test bed picks free ports (a default port may be taken on the
// machine), so its first cluster's host:port replace these.
const (
	readmeBrokerHostPort = "localhost:6650"
	readmeAdminHostPort  = "localhost:8080"
)

var _ = Describe("README.md's quick start", func() {
	It("runs as shown against a local plain cluster: topology, topic, then the program", func(ctx SpecContext) {
		readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
		Expect(err).NotTo(HaveOccurred())
		dir := GinkgoT().TempDir()
		c := bed.Clusters()[0]

		step("write clusters.yaml from README.md")
		yaml := readmeBlock(string(readme), readmeTopologyMark)
		Expect(yaml).To(ContainSubstring(readmeBrokerHostPort))
		Expect(yaml).To(ContainSubstring(readmeAdminHostPort))
		yaml = strings.ReplaceAll(yaml, readmeBrokerHostPort, hostPort(c.ServiceURL))
		yaml = strings.ReplaceAll(yaml, readmeAdminHostPort, hostPort(c.AdminURL))
		topo, err := topology.Parse([]byte(yaml))
		Expect(err).NotTo(HaveOccurred())
		Expect(topo.Clusters).To(HaveLen(1), "the quick start runs on one local cluster")
		Expect(os.WriteFile(filepath.Join(dir, "clusters.yaml"), []byte(yaml), 0o600)).To(Succeed())

		step("create the topic with README.md's keyroute command")
		cli := program.Run{Bin: program.Build("./cmd/keyroute", dir), Dir: dir}
		creates := 0
		for line := range strings.Lines(readmeBlock(string(readme), readmeTopicMark)) {
			args, ok := strings.CutPrefix(strings.TrimSpace(line), "keyroute ")
			if !ok {
				continue // go install: the suite builds the command from the repository
			}
			out := cli.Exec(ctx, strings.Fields(args)...)
			Expect(out.Code).To(BeZero(), "keyroute %s: %s", args, out.Stderr)
			creates++
		}
		Expect(creates).To(Equal(1), "README.md's topic block should hold one keyroute command")

		step("build and run README.md's program")
		src := filepath.Join(dir, "src")
		Expect(os.Mkdir(src, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(src, "main.go"), []byte(readmeBlock(string(readme), readmeProgramMark)), 0o600)).To(Succeed())
		bin := filepath.Join(dir, "quickstart")
		// The program builds against the repository's modules: go build
		// runs in the repository's root, which is in the workspace.
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, filepath.Join(src, "main.go"))
		build.Dir = filepath.Join("..", "..")
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "go build README.md's program:\n%s", out)
		run := program.Run{Bin: bin, Dir: dir}.Exec(ctx)
		Expect(run.Code).To(BeZero(), "README.md's program failed: %s", run.Stderr)

		step("check its output")
		var received []string
		for line := range strings.Lines(run.Stdout) {
			if id, msg, ok := strings.Cut(strings.TrimSpace(line), " user-42="); ok {
				Expect(id).To(ContainSubstring(topo.Clusters[0].Name+"/"), "a message ID names its cluster")
				received = append(received, msg)
			}
		}
		Expect(run.Stdout).To(HavePrefix("written at " + topo.Clusters[0].Name + "/"))
		Expect(received).To(Equal([]string{"signed up", "click 0", "click 1", "click 2"}), "every message once, in send order")
		step("")
	}, SpecTimeout(20*time.Minute))
})

// readmeBlock returns the fenced code block that follows mark in readme
// (without its fences), failing the spec unless there is exactly one.
func readmeBlock(readme, mark string) string {
	parts := strings.Split(readme, mark+"\n")
	Expect(parts).To(HaveLen(2), "README.md must hold %q exactly once", mark)
	open, body, ok := strings.Cut(parts[1], "\n")
	Expect(ok && strings.HasPrefix(open, "```")).To(BeTrue(), "README.md: %q must be followed by a fenced code block, found %q", mark, open)
	body, _, ok = strings.Cut(body, "```\n")
	Expect(ok).To(BeTrue(), "README.md: the code block after %q is not closed", mark)
	return body
}

// hostPort returns the host:port of a cluster URL.
func hostPort(raw string) string {
	u, err := url.Parse(raw)
	Expect(err).NotTo(HaveOccurred())
	Expect(u.Host).NotTo(BeEmpty(), "URL %s", raw)
	return u.Host
}
