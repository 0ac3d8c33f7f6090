package browser

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/PID/stat's times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// ProcessCPU returns the CPU time (user and system) the process pid has
// used so far, or 0 when it cannot be read.
func ProcessCPU(pid int) time.Duration {
	fields := statFields(pid)
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * clockTick
}

// parentOf returns the parent of the process pid, or 0.
func parentOf(pid int) int {
	fields := statFields(pid)
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// statFields returns the fields of /proc/PID/stat from the state on (the
// third field).
func statFields(pid int) []string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	// The command's name, in parentheses, may hold spaces: the fields
	// that follow start after its last parenthesis, with the state.
	s := string(data)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

// CPU returns the CPU time used so far by the browser's running processes
// (a renderer's ends with it: CPU compares within one tab's life).
func (b *Browser) CPU() time.Duration {
	var total time.Duration
	for _, pid := range b.processes() {
		total += ProcessCPU(pid)
	}
	return total
}
