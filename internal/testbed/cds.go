package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// cdsDumpGrace is how long the training JVM may take to exit after SIGTERM:
// it writes the archive on the way out.
const cdsDumpGrace = 90 * time.Second

// prepareCDS returns the JVM flags that make the brokers share an AppCDS
// archive, building the archive first if this JDK, distribution and flag
// set have none yet. Class-data sharing only speeds up startup, so every
// failure is reported to the log writer and answered with no flags.
func (s *setup) prepareCDS(ctx context.Context) []string {
	archive, err := s.cdsPath(ctx)
	if err != nil {
		fmt.Fprintf(s.w, "testbed: class-data sharing off: %v\n", err)
		return nil
	}
	flags := []string{"-XX:SharedArchiveFile=" + archive}
	if _, err := os.Stat(archive); err == nil {
		return flags
	}
	if err := os.MkdirAll(filepath.Dir(archive), 0o755); err != nil {
		fmt.Fprintf(s.w, "testbed: class-data sharing off: %v\n", err)
		return nil
	}
	unlock, err := lockFile(ctx, archive+".lock")
	if err != nil {
		fmt.Fprintf(s.w, "testbed: class-data sharing off: %v\n", err)
		return nil
	}
	defer unlock()
	if _, err := os.Stat(archive); err == nil {
		return flags // built by another process while we waited
	}
	start := time.Now()
	fmt.Fprintf(s.w, "testbed: building class-data-sharing archive %s (once per JDK build) ...\n", archive)
	if err := s.buildCDS(ctx, archive); err != nil {
		fmt.Fprintf(s.w, "testbed: class-data sharing off: %v\n", err)
		return nil
	}
	fmt.Fprintf(s.w, "testbed: class-data-sharing archive built in %s\n", since(start))
	return flags
}

// cdsPath names the archive for this JDK build, distribution and flags.
func (s *setup) cdsPath(ctx context.Context) (string, error) {
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	fp, err := jvmFingerprint(ctx, s.java, s.home, s.tuning)
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "cds", "pulsar-"+PulsarVersion+"-"+fp+".jsa"), nil
}

// buildCDS runs one training broker until it is ready, stops it cleanly so
// that the JVM dumps the classes it loaded, checks that the JVM accepts the
// dump and moves it into place.
func (s *setup) buildCDS(ctx context.Context, archive string) error {
	tmp := archive + ".tmp-" + strconv.Itoa(os.Getpid())
	defer os.Remove(tmp)
	ports, err := clusterPorts(1)
	if err != nil {
		return err
	}
	train := *s
	train.share = []string{"-XX:ArchiveClassesAtExit=" + tmp}
	c, err := newCluster(&train, "cds-training", ports[0])
	if err != nil {
		return err
	}
	defer c.removeData()
	if err := c.start(); err != nil {
		return err
	}
	if err := c.waitReady(ctx); err != nil {
		c.Kill()
		return err
	}
	if err := c.stop(cdsDumpGrace); err != nil {
		return err
	}
	if _, err := os.Stat(tmp); err != nil {
		return c.errorf("dump class-data-sharing archive", err)
	}
	// -Xshare:on turns an unusable archive into a hard error.
	check := []string{"-Xshare:on", "-XX:SharedArchiveFile=" + tmp}
	check = append(check, s.tuning...)
	check = append(check, fixedJVMArgs(s.home)...)
	check = append(check, "-version")
	if out, err := exec.CommandContext(ctx, s.java, check...).CombinedOutput(); err != nil {
		return fmt.Errorf("archive rejected: %w\n%s", err, tail(out, 20))
	}
	return os.Rename(tmp, archive)
}
