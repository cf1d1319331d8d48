package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// clockTicksPerSecond is USER_HZ, the unit of utime and stime in /proc/<pid>/stat. The kernel
// fixes it at 100 on every architecture Go supports on Linux (getconf CLK_TCK prints it).
const clockTicksPerSecond = 100

// cpuSample is the CPU time a process has used so far, read two ways: Run sums the run time of
// each of its threads from /proc/<pid>/task/<tid>/schedstat (nanoseconds, the scheduler's own
// accounting), Ticks is utime+stime from /proc/<pid>/stat (10 ms ticks, kept as a cross-check).
type cpuSample struct {
	Run   time.Duration
	Ticks time.Duration
}

// sub returns the CPU used between earlier and s.
func (s cpuSample) sub(earlier cpuSample) cpuSample {
	return cpuSample{Run: s.Run - earlier.Run, Ticks: s.Ticks - earlier.Ticks}
}

// add returns the sum of two samples.
func (s cpuSample) add(o cpuSample) cpuSample {
	return cpuSample{Run: s.Run + o.Run, Ticks: s.Ticks + o.Ticks}
}

// readCPU reads the CPU time of the running process pid from /proc. A thread that has exited no
// longer appears under task/, so Run can miss its time; Go servers do not end their threads,
// and Ticks (which keeps it) shows whether that ever mattered.
func readCPU(pid int) (cpuSample, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return cpuSample{}, fmt.Errorf("read CPU time of process %d: %w", pid, err)
	}
	ticks, err := parseStatCPU(stat)
	if err != nil {
		return cpuSample{}, fmt.Errorf("read CPU time of process %d: %w", pid, err)
	}
	s := cpuSample{Ticks: time.Duration(ticks) * (time.Second / clockTicksPerSecond)}
	tasks, err := os.ReadDir(filepath.Join(dir, "task"))
	if err != nil {
		return cpuSample{}, fmt.Errorf("read threads of process %d: %w", pid, err)
	}
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, "task", t.Name(), "schedstat"))
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread exited between ReadDir and ReadFile
		}
		if err != nil {
			return cpuSample{}, fmt.Errorf("read CPU time of thread %s of process %d: %w", t.Name(), pid, err)
		}
		ns, err := parseSchedstat(b)
		if err != nil {
			return cpuSample{}, fmt.Errorf("thread %s of process %d: %w", t.Name(), pid, err)
		}
		s.Run += time.Duration(ns)
	}
	return s, nil
}

// parseStatCPU returns utime+stime, in clock ticks, from the contents of /proc/<pid>/stat. The
// command name (field 2) is in parentheses and may itself hold spaces and parentheses, so the
// fields are counted from the last ')'.
func parseStatCPU(stat []byte) (int64, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("/proc stat: no ')' closing the command name")
	}
	// After ')' come fields 3 (state) onwards; utime and stime are fields 14 and 15.
	fields := bytes.Fields(stat[end+1:])
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("/proc stat: %d fields after the command name, want at least %d", len(fields), stime+1)
	}
	var total int64
	for _, i := range []int{utime, stime} {
		v, err := strconv.ParseInt(string(fields[i]), 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("/proc stat: field %d is %q, want a count of clock ticks", i+3, fields[i])
		}
		total += v
	}
	return total, nil
}

// parseSchedstat returns the first field of /proc/<pid>/task/<tid>/schedstat: nanoseconds the
// thread has run on a CPU.
func parseSchedstat(b []byte) (int64, error) {
	fields := bytes.Fields(b)
	if len(fields) == 0 {
		return 0, errors.New("schedstat is empty")
	}
	v, err := strconv.ParseInt(string(fields[0]), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("schedstat run time is %q, want nanoseconds", fields[0])
	}
	return v, nil
}
