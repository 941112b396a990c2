package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// dbSample is what the database had done by one moment: what Aurora
// bills by (compute, storage, I/O) as PostgreSQL shows it.
type dbSample struct {
	size    int64         // pg_database_size of the runner's database
	wal     int64         // WAL position, bytes
	commits int64         // transactions committed in the database
	cpu     time.Duration // the server's processes' CPU time; 0 if unknown
}

// dbDelta is the database's work between two samples.
type dbDelta struct {
	Growth  int64 // bytes the database grew
	WAL     int64 // bytes of WAL written
	Commits int64
	// CPU is the server's CPU time; CPUKnown is false when the server's
	// processes could not be read (not on this machine, not Linux).
	CPU      time.Duration
	CPUKnown bool
}

func (b dbSample) sub(a dbSample) dbDelta {
	return dbDelta{Growth: b.size - a.size, WAL: b.wal - a.wal, Commits: b.commits - a.commits,
		CPU: b.cpu - a.cpu, CPUKnown: a.cpu > 0 && b.cpu > 0}
}

// sampleDB samples the database. The statistics are the server's (WAL,
// CPU) and the database's (size, commits): on a server of its own, as the
// embedded one is, they are the runner's alone.
func sampleDB(ctx context.Context, conn *pgx.Conn) (dbSample, error) {
	var s dbSample
	var pid int
	// A fresh statistics snapshot, or the commit count lags.
	if _, err := conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
		return s, fmt.Errorf("sample the database: %w", err)
	}
	err := conn.QueryRow(ctx, `SELECT pg_database_size(current_database()),
		pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint,
		(SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
		pg_backend_pid()`).Scan(&s.size, &s.wal, &s.commits, &pid)
	if err != nil {
		return s, fmt.Errorf("sample the database: %w", err)
	}
	s.cpu, _ = serverCPU(pid)
	return s, nil
}

// clockTicks is Linux's USER_HZ, the unit of the CPU times in /proc: 100
// on every architecture Linux runs Go on.
const clockTicks = 100

// serverCPU is the CPU time of the PostgreSQL server that backend pid
// belongs to: its postmaster's own and that of the children it has reaped
// (exited backends), plus its live children's. Only for a server on this
// machine, on Linux.
func serverCPU(backend int) (time.Duration, error) {
	st, err := procStat(backend)
	if err != nil {
		return 0, err
	}
	postmaster := st.ppid
	pm, err := procStat(postmaster)
	if err != nil {
		return 0, err
	}
	ticks := pm.utime + pm.stime + pm.cutime + pm.cstime
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, err
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if c, err := procStat(pid); err == nil && c.ppid == postmaster {
			ticks += c.utime + c.stime
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// stat is what serverCPU reads of /proc/<pid>/stat.
type stat struct {
	ppid                         int
	utime, stime, cutime, cstime int64
}

// procStat reads /proc/<pid>/stat: fields 4 (ppid) and 14–17 (CPU
// times), counted after the command name, which may hold spaces and is
// closed by the last ')'.
func procStat(pid int) (stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, err
	}
	return parseStat(string(b))
}

func parseStat(s string) (stat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return stat{}, errors.New("/proc stat: no command name")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): field n is f[n-3].
	if len(f) < 15 {
		return stat{}, errors.New("/proc stat: too few fields")
	}
	var st stat
	var err error
	if st.ppid, err = strconv.Atoi(f[1]); err != nil {
		return stat{}, fmt.Errorf("/proc stat: ppid: %w", err)
	}
	for i, p := range []*int64{&st.utime, &st.stime, &st.cutime, &st.cstime} {
		if *p, err = strconv.ParseInt(f[11+i], 10, 64); err != nil {
			return stat{}, fmt.Errorf("/proc stat: field %d: %w", 14+i, err)
		}
	}
	return st, nil
}
