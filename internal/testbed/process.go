package testbed

import (
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// process is one running JVM. done is closed once the JVM has exited and
// been reaped; err is set before that and read only after.
type process struct {
	cmd  *exec.Cmd
	pid  int
	done chan struct{}
	err  error
}

// exited reports whether the JVM has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the JVM's process group. Errors are ignored: the
// group may already be gone.
func (p *process) signal(sig syscall.Signal) {
	_ = syscall.Kill(-p.pid, sig)
}

// spawn starts cmd in its own process group with a parent-death signal and
// registers it with the reaper. Linux sends the parent-death signal when
// the forking *thread* exits, so every fork happens on one OS thread that
// is locked for the life of the process.
func spawn(cmd *exec.Cmd, logFile *os.File) (*process, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	installReaper()
	reply := make(chan error)
	spawnReqs <- spawnReq{cmd: cmd, reply: reply}
	if err := <-reply; err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	reaper.add(p)
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		reaper.remove(p)
		close(p.done)
	}()
	return p, nil
}

type spawnReq struct {
	cmd   *exec.Cmd
	reply chan error
}

var (
	spawnReqs = make(chan spawnReq)
	spawnOnce sync.Once
)

// spawnLoop forks on a locked OS thread that never exits.
func spawnLoop() {
	runtime.LockOSThread()
	for req := range spawnReqs {
		req.reply <- req.cmd.Start()
	}
}

// reaper knows every JVM this process started and kills them all when the
// process is interrupted.
var reaper = &registry{procs: make(map[*process]struct{}), dirs: make(map[string]struct{})}

type registry struct {
	mu    sync.Mutex // guards procs and dirs
	procs map[*process]struct{}
	dirs  map[string]struct{} // data dirs to remove after a kill-all
}

func (r *registry) add(p *process) {
	r.mu.Lock()
	r.procs[p] = struct{}{}
	r.mu.Unlock()
}

func (r *registry) remove(p *process) {
	r.mu.Lock()
	delete(r.procs, p)
	r.mu.Unlock()
}

func (r *registry) addDir(d string) {
	r.mu.Lock()
	r.dirs[d] = struct{}{}
	r.mu.Unlock()
}

func (r *registry) removeDir(d string) {
	r.mu.Lock()
	delete(r.dirs, d)
	r.mu.Unlock()
}

// killAll sends SIGKILL to every JVM, waits up to wait for them to be
// reaped and removes the registered data dirs.
func (r *registry) killAll(wait time.Duration) {
	r.mu.Lock()
	procs := make([]*process, 0, len(r.procs))
	for p := range r.procs {
		procs = append(procs, p)
	}
	r.mu.Unlock()
	for _, p := range procs {
		p.signal(syscall.SIGCONT)
		p.signal(syscall.SIGKILL)
	}
	deadline := time.After(wait)
	for _, p := range procs {
		select {
		case <-p.done:
		case <-deadline:
		}
	}
	r.mu.Lock()
	for d := range r.dirs {
		os.RemoveAll(d)
	}
	r.mu.Unlock()
}

var reaperOnce sync.Once

// installReaper starts the spawner thread and, once per process, a handler
// that on SIGINT or SIGTERM kills every started JVM, removes their data
// dirs and then lets the signal terminate the process as it would have.
func installReaper() {
	spawnOnce.Do(func() { go spawnLoop() })
	reaperOnce.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			sig := <-ch
			reaper.killAll(5 * time.Second)
			signal.Reset(sig)
			if s, ok := sig.(syscall.Signal); ok {
				_ = syscall.Kill(os.Getpid(), s)
			}
			time.Sleep(time.Second)
			os.Exit(1)
		}()
	})
}
