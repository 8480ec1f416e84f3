package testbed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

const mainClass = "org.apache.pulsar.PulsarStandaloneStarter"

// DefaultJVMArgs returns the heap, GC and JIT flags a cluster's JVM gets
// unless Options.JVMArgs replaces them: the serial collector, the C1 JIT
// only and small heaps. Five such brokers start in seconds on two cores and
// take ~260-290 MB of RSS each, which is plenty for functional tests.
func DefaultJVMArgs() []string {
	return []string{
		"-XX:+UseSerialGC",
		"-XX:TieredStopAtLevel=1",
		"-Xms32m",
		"-Xmx128m",
		"-XX:MaxDirectMemorySize=128m",
	}
}

// fixedJVMArgs are the flags every broker JVM needs whatever the heap
// settings: the module openings and properties bin/pulsar passes on JDK 17.
func fixedJVMArgs(home string) []string {
	return []string{
		"-XX:+PerfDisableSharedMem",
		"-Djava.net.preferIPv4Stack=true",
		"-Djute.maxbuffer=10485760",
		"-Dzookeeper.clientTcpKeepAlive=true",
		"--add-opens", "java.base/java.io=ALL-UNNAMED",
		"--add-opens", "java.base/java.util.zip=ALL-UNNAMED",
		"--add-opens", "java.management/sun.management=ALL-UNNAMED",
		"--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
		"--add-opens", "java.base/java.nio=ALL-UNNAMED",
		"--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
		"--add-opens", "java.base/jdk.internal.platform=ALL-UNNAMED",
		"--enable-native-access=ALL-UNNAMED",
		"-Dio.netty.tryReflectionSetAccessible=true",
		"-Dorg.apache.pulsar.shade.io.netty.tryReflectionSetAccessible=true",
		"-Dpulsar.allocator.exit_on_oom=true",
		"-Dio.netty.recycler.maxCapacityPerThread=4096",
		"-Dlog4j.shutdownHookEnabled=false",
		"-Dlog4j2.is.webapp=false",
		// The distribution's log4j2.yaml by absolute path: a conf directory
		// on the classpath would stop class-data sharing from dumping.
		"-Dlog4j.configurationFile=" + filepath.Join(home, "conf", "log4j2.yaml"),
		"-Dpulsar.log.appender=Console",
		"-Dpulsar.routing.appender.default=Console",
		"-Dpulsar.log.level=info",
		"-Dpulsar.log.root.level=info",
		"-cp", filepath.Join(home, "lib", "*"),
	}
}

// jvmCommandLine returns the java arguments for one standalone cluster.
// share holds the class-data-sharing flags (may be empty). The bookie
// listens on bookiePort (see portSet.bookie; the standalone honours it only
// with allowEphemeralPorts=true, which brokerConfig sets).
func jvmCommandLine(home string, tuning, share []string, confPath, dataDir string, bookiePort int) []string {
	args := append([]string(nil), share...)
	args = append(args, tuning...)
	args = append(args, fixedJVMArgs(home)...)
	args = append(args,
		"-Dpulsar.log.dir="+dataDir,
		"-Dpulsar.config.file="+confPath,
		mainClass,
		"--config", confPath,
		"--metadata-dir", filepath.Join(dataDir, "metadata"),
		"--bookkeeper-dir", filepath.Join(dataDir, "bookkeeper"),
		"--bookkeeper-port", strconv.Itoa(bookiePort),
		"--no-functions-worker",
		"--no-stream-storage",
	)
	return args
}

// findJava returns the java executable: $JAVA_HOME/bin/java or java on
// PATH.
func findJava() (string, error) {
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		p := filepath.Join(jh, "bin", "java")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("%w: java (set JAVA_HOME or PATH): %v", ErrToolMissing, err)
	}
	return p, nil
}

// jvmFingerprint identifies a JDK build plus the flags that shape a
// class-data-sharing archive, so that a new JDK, distribution or flag set
// gets a new archive instead of a rejected one.
func jvmFingerprint(ctx context.Context, java, home string, tuning []string) (string, error) {
	out, err := exec.CommandContext(ctx, java, "-version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("testbed: %s -version: %w", java, err)
	}
	real, err := filepath.EvalSymlinks(java)
	if err != nil {
		real = java
	}
	h := sha256.New()
	for _, s := range []string{real, string(out), home, PulsarVersion, strings.Join(tuning, " ")} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
