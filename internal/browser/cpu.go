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
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command's name, in parentheses, may hold spaces: the fields
	// that follow start after its last parenthesis, with the state.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * clockTick
}

// CPU returns the CPU time used so far by the browser's running processes.
func (b *Browser) CPU() time.Duration {
	var total time.Duration
	for _, pid := range pidsUsing(b.dir) {
		total += ProcessCPU(pid)
	}
	return total
}
