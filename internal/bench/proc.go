package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sample is one measured process.
type sample struct {
	wall   time.Duration
	maxRSS int64         // bytes, the process and the children it waited for
	cpu    time.Duration // user + system time, the process and its children
	rchar  int64         // bytes read through read(2)-like calls, -1 if unknown
}

// cmdSpec is a command to measure: argv, the exit codes that count as
// success, what to run before and what to remove after each run (both
// off the clock).
type cmdSpec struct {
	argv    []string
	okCodes []int
	cleanup []string
	setup   [][]string // commands run before, off the clock
	// output is the file the command writes. As a user meets it (the
	// default), the command removes it itself, inside the timed run:
	// the previous run's output is deleted on the clock, as a user's
	// "rm -f out && pteexport ... -o out" (or a re-run over an existing
	// output) pays for it. With offClock it is removed, and everything
	// synced, before the clock starts.
	output string
}

// offClock selects the measurement the earlier tables used: before each
// run the old output is removed and sync(2) is called off the clock. The
// default is the outside way: nothing is removed or synced off the clock
// (only setup, which prepares an input, is followed by a sync).
var offClock bool

// wrapRemove returns argv run after removing output, in the same timed
// process tree: sh -c 'rm -f -- "$0" && exec "$@"' output argv...
func wrapRemove(output string, argv []string) []string {
	return append([]string{"sh", "-c", `rm -f -- "$0" && exec "$@"`, output}, argv...)
}

// measure runs c once and returns its sample (see cmdSpec.output and
// offClock for what happens to the old output and the page cache). The command
// is started by a fresh copy of this program (launch), so that the peak
// RSS the kernel reports for it starts from that small process and not
// from this one: at exec a process inherits the high-water mark of the
// memory it was forked with.
func measure(c cmdSpec) (sample, error) {
	argv := c.argv
	if offClock {
		removeAll(c.cleanup, c.output)
	} else if c.output != "" {
		argv = wrapRemove(c.output, argv)
	}
	for _, argv := range c.setup {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			return sample{}, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, out)
		}
	}
	if offClock || len(c.setup) > 0 {
		syscall.Sync()
	}
	self, err := os.Executable()
	if err != nil {
		return sample{}, err
	}
	var stdout, stderr strings.Builder
	cmd := exec.Command(self, append([]string{"-launch"}, argv...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return sample{}, fmt.Errorf("%s: %v: %s", strings.Join(c.argv, " "), err, strings.TrimSpace(stderr.String()))
	}
	var s sample
	var wall, cpu int64
	var code int
	if _, err := fmt.Sscan(stdout.String(), &wall, &s.maxRSS, &s.rchar, &code, &cpu); err != nil {
		return sample{}, fmt.Errorf("launcher output %q: %v", stdout.String(), err)
	}
	s.wall, s.cpu = time.Duration(wall), time.Duration(cpu)
	if code != 0 && !slices.Contains(c.okCodes, code) {
		return s, fmt.Errorf("%s: exit status %d: %s", strings.Join(c.argv, " "), code, strings.TrimSpace(stderr.String()))
	}
	if offClock {
		removeAll(c.cleanup, c.output)
	}
	return s, nil
}

// removeAll removes paths and output, when it is set.
func removeAll(paths []string, output string) {
	for _, p := range append(paths, output) {
		if p != "" {
			os.RemoveAll(p)
		}
	}
}

// launch runs argv with its standard output discarded and prints its wall
// time (ns), peak RSS (bytes), rchar, exit code and CPU time (ns, user +
// system). The process is waited
// for without being reaped (waitid WNOWAIT) so that /proc/PID/io can still
// be read, then reaped with wait4 for its rusage.
func launch(argv []string) {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		fatalf("%v", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = devnull, os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fatalf("%v", err)
	}
	waitExited(cmd.Process.Pid)
	wall := time.Since(start)
	rchar := readIO(cmd.Process.Pid)
	cmd.Wait()
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = int64(ru.Maxrss) * 1024
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	fmt.Println(wall.Nanoseconds(), rss, rchar, cmd.ProcessState.ExitCode(), cpu.Nanoseconds())
}

// waitExited blocks until pid has exited, leaving it to be reaped.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != unix.EINTR {
			return
		}
	}
}

// readIO returns rchar from /proc/PID/io, or -1.
func readIO(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "rchar: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// pairResult is a row's measurements: ours and the baseline, pair by pair.
type pairResult struct {
	ours, base []sample
}

// rotate runs each of specs n times, in rounds; each round starts one
// further along the list (with two, alternating which goes first). It
// returns the samples of each spec, in order.
func rotate(n int, specs ...cmdSpec) ([][]sample, error) {
	runs := make([][]sample, len(specs))
	for i := range n {
		for k := range specs {
			j := (i + k) % len(specs)
			s, err := measure(specs[j])
			if err != nil {
				return nil, err
			}
			runs[j] = append(runs[j], s)
		}
	}
	return runs, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
}

// values are f of each sample.
func values(ss []sample, f func(sample) float64) []float64 {
	var out []float64
	for _, s := range ss {
		out = append(out, f(s))
	}
	return out
}

func walls(ss []sample) []float64 {
	return values(ss, func(s sample) float64 { return s.wall.Seconds() })
}

// cpus are the samples' CPU times in seconds.
func cpus(ss []sample) []float64 {
	return values(ss, func(s sample) float64 { return s.cpu.Seconds() })
}

// ratios are the per-pair ratios ours/base.
func (r *pairResult) ratios() []float64 {
	var xs []float64
	for i := range r.ours {
		xs = append(xs, r.ours[i].wall.Seconds()/r.base[i].wall.Seconds())
	}
	return xs
}

// ratio is the median of the per-pair ratios.
func (r *pairResult) ratio() float64 { return median(r.ratios()) }

// spread formats the smallest and largest per-pair ratio.
func (r *pairResult) spread() string {
	xs := r.ratios()
	if len(xs) == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f-%.2f", slices.Min(xs), slices.Max(xs))
}

// peak is the largest peak RSS of the samples; reads the median rchar.
func peak(ss []sample) int64 {
	var m int64
	for _, s := range ss {
		m = max(m, s.maxRSS)
	}
	return m
}

// medianRSS is the median of the runs' peak RSS.
func medianRSS(ss []sample) int64 {
	return int64(median(values(ss, func(s sample) float64 { return float64(s.maxRSS) })))
}

func reads(ss []sample) int64 {
	if slices.ContainsFunc(ss, func(s sample) bool { return s.rchar < 0 }) {
		return -1
	}
	return int64(median(values(ss, func(s sample) float64 { return float64(s.rchar) })))
}
