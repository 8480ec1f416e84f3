package testbed

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

const (
	dataDirPrefix = "keyroute-testbed-"
	ownerFile     = "owner.pid"
)

// markOwner records this process as the owner of a data dir.
func markOwner(dataDir string) error {
	return os.WriteFile(filepath.Join(dataDir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644)
}

// removeStaleDataDirs deletes data dirs under parent left behind by test
// bed processes that died without cleaning up (e.g. SIGKILL; their JVMs
// died with them through the parent-death signal). Dirs whose owner still
// runs, or whose owner is unknown, are kept.
func removeStaleDataDirs(parent string) {
	if parent == "" {
		parent = os.TempDir()
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, dataDirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}
