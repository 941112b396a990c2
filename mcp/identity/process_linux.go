package identity

import (
	"bytes"
	"os"
	"strconv"
)

// processStart is the start time of process pid in clock ticks since
// boot (field 22 of /proc/<pid>/stat), "" when unreadable.
func processStart(pid int) string {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces and ')': fields after
	// the last ')' are plain.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return ""
	}
	fields := bytes.Fields(stat[i+1:])
	const startField = 22 - 3 // fields[0] is field 3 (state)
	if len(fields) <= startField {
		return ""
	}
	return string(fields[startField])
}
