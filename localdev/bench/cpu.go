package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat: USER_HZ,
// 100 on every Linux the bench runs on.
const clockTick = 10 * time.Millisecond

// cpuMeter reads the CPU time spent so far by a set of processes: the
// client and server (this process, or a server's own when given) and the
// database backends of the run, picked by their application_name, so that
// other work on the machine and on the same database server is left out.
// A send's cost is what it makes all of them spend: the same on the
// throughput rows' two cores whether the database or the service spends it.
type cpuMeter struct {
	admin *pgxpool.Pool // reads pg_stat_activity
	app   string        // application_name of the backends counted
	pids  []int         // processes counted besides the backends
}

// sample is the CPU time spent so far; ok is false off Linux or when a
// process could not be read.
func (m cpuMeter) sample(ctx context.Context) (time.Duration, bool) {
	rows, err := m.admin.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, m.app)
	if err != nil {
		return 0, false
	}
	pids := append([]int(nil), m.pids...)
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) == nil {
			pids = append(pids, pid)
		}
	}
	rows.Close()
	var sum time.Duration
	for _, pid := range pids {
		d, err := procCPU(pid)
		if err != nil {
			if pid == os.Getpid() || !os.IsNotExist(err) {
				return 0, false
			}
			continue // a backend that ended between the query and the read
		}
		sum += d
	}
	return sum, true
}

// procCPU is a process's user and system time from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing parenthesis (utime and stime are fields 14 and 15).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * clockTick, nil
}

// cpuPer formats CPU time per operation, "—" when unknown.
func cpuPer(cpu time.Duration, ok bool, count int) string {
	if !ok || count == 0 {
		return "—"
	}
	return ms(cpu / time.Duration(count))
}
