package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// toMix turns a pass into one agent-hour: its counts divided by the
// agent-hours it ran, its polls' and streams' held time scaled back to
// simulated seconds. What API Gateway answered is what went to a
// function; polls and streams went to the poll base.
func (r passResult) toMix() mix {
	per := 1 / (float64(r.agents) * r.hours)
	m := mix{API: map[string]load{}}
	for _, ru := range r.routes {
		if ru.isPoll() {
			m.Poll.Requests += float64(ru.Count) * per
			m.Poll.Held += ru.Held.Seconds() * float64(r.speed) * per
			m.Poll.Bytes += float64(ru.Bytes) * per
			continue
		}
		l := m.API[ru.Function]
		l.Requests += float64(ru.Count) * per
		l.Billed += ru.Billed.Seconds() * per
		l.Held += ru.Held.Seconds() * per
		l.Bytes += float64(ru.Bytes) * per
		m.API[ru.Function] = l
	}
	m.DBCPU, m.CPUKnown = r.db.CPU.Seconds()*per, r.db.CPUKnown
	m.WAL, m.Growth = float64(r.db.WAL)*per, float64(r.db.Growth)*per
	return m
}

// report prints the run's measurements and the bills, as Markdown.
func report(w io.Writer, opt options, z sizing, res []passResult) {
	fmt.Fprintf(w, "Measured %s: %d agents in rooms of %d, the scripted hour run %d× faster than real time.\n\n",
		time.Now().UTC().Format("2006-01-02"), opt.agents, opt.room, opt.speed)

	// The request mix, both modes side by side.
	type row struct{ route, fn string }
	rows := map[row]bool{}
	for _, r := range res {
		for _, ru := range r.routes {
			rows[row{ru.Route, ru.Function}] = true
		}
	}
	keys := slices.SortedFunc(maps.Keys(rows), func(a, b row) int {
		if c := strings.Compare(a.fn, b.fn); c != 0 {
			return c
		}
		return strings.Compare(a.route, b.route)
	})
	fmt.Fprintln(w, "Requests per agent-hour, by route:")
	fmt.Fprintln(w)
	head := "| route | function |"
	sep := "|---|---|"
	for _, r := range res {
		head += fmt.Sprintf(" %s: per agent-h | mean ms | KB per agent-h |", modeName(r.mode))
		sep += "---:|---:|---:|"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, sep)
	for _, k := range keys {
		line := fmt.Sprintf("| `%s` | %s |", k.route, k.fn)
		for _, r := range res {
			ru := r.routes[k.route]
			if ru == nil || ru.Function != k.fn {
				line += " | | |"
				continue
			}
			per := 1 / (float64(r.agents) * r.hours)
			mean := ru.Held.Seconds() * 1000 / float64(ru.Count)
			if ru.isPoll() {
				mean *= float64(r.speed) // held, in simulated time
			}
			line += fmt.Sprintf(" %.1f | %s | %.1f |", float64(ru.Count)*per, num(mean), float64(ru.Bytes)*per/1000)
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
	for _, r := range res {
		m := r.toMix()
		fmt.Fprintf(w, "- %s: %.1f requests per agent-hour through API Gateway, %.1f to the poll base; "+
			"polls and streams held %.2f connections per agent on average; database per agent-hour: %s CPU-s, %s B of WAL, %s B of growth, %.1f transactions",
			modeName(r.mode), m.apiRequests(), m.Poll.Requests, m.Poll.Held/3600, cpuText(m), num(m.WAL), num(m.Growth),
			float64(r.db.Commits)/(float64(r.agents)*r.hours))
		fmt.Fprintf(w, " (%.2f simulated hours)\n", r.hours)
	}
	fmt.Fprintln(w)

	for _, r := range res {
		m := r.toMix()
		for _, n := range opt.sizes {
			lines := monthly(m, z, listPrices, n, r.mode)
			t := total(lines)
			fmt.Fprintf(w, "%s, %s agents, a month (730 h), USD:\n\n", modeName(r.mode), group(fmt.Sprintf("%.0f", n)))
			fmt.Fprintln(w, "| item | arithmetic | USD |")
			fmt.Fprintln(w, "|---|---|---:|")
			for _, l := range lines {
				fmt.Fprintf(w, "| %s | %s | %s |\n", l.Item, l.Formula, money(l.USD))
			}
			fmt.Fprintf(w, "| **total** | %s an agent | **%s** |\n\n", money(t/n), money(t))
		}
	}

	// Both modes at every size, and where the Lambda-only mode stops
	// paying.
	fmt.Fprint(w, "| monthly | ")
	for _, n := range opt.sizes {
		fmt.Fprintf(w, "%s agents | ", group(fmt.Sprintf("%.0f", n)))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "|---|"+strings.Repeat("---:|", len(opt.sizes)))
	for _, r := range res {
		fmt.Fprintf(w, "| %s | ", modeName(r.mode))
		for _, n := range opt.sizes {
			t := total(monthly(r.toMix(), z, listPrices, n, r.mode))
			fmt.Fprintf(w, "%s (%s an agent) | ", money(t), money(t/n))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	var service, lambdaOnly mix
	for _, r := range res {
		if r.mode == modeLambda {
			lambdaOnly = r.toMix()
		} else {
			service = r.toMix()
		}
	}
	gb := float64(z.MemoryMB["poll"]) / 1024
	always := 3600 * hoursPerMonth * gb * listPrices.LambdaGBs
	perAgent := lambdaOnly.Poll.Held*hoursPerMonth*gb*listPrices.LambdaGBs + lambdaOnly.Poll.Requests*hoursPerMonth/1e6*listPrices.LambdaPerM
	floor := z.MinTasks*(z.TaskVCPU*listPrices.FargateVCPUh+z.TaskGB*listPrices.FargateGBh)*hoursPerMonth +
		(listPrices.ALBHour+albAddresses*listPrices.IPv4Hour)*hoursPerMonth
	conns := service.Poll.Held / 3600
	marginal := conns/z.ConnsPerTask*(z.TaskVCPU*listPrices.FargateVCPUh+z.TaskGB*listPrices.FargateGBh)*hoursPerMonth +
		conns/lcuConnections*listPrices.LCUHour*hoursPerMonth
	fmt.Fprintf(w, "Lambda-only poll mode: an instance held the whole month costs 3,600 s × 730 h × %g GB × $%g = %s; "+
		"the scripted agent holds %.2f instances (%.0f s of polls an hour) and makes %.0f polls an hour: %s an agent a month. "+
		"The poll service costs %s a month before its first agent (%g task, the ALB's hours and addresses) and then %s an agent "+
		"(%.2f connections: task share and LCUs): the Lambda-only mode is cheaper below %.1f agents; "+
		"1,000 concurrent executions (the default account quota) hold %.0f such agents.\n",
		gb, listPrices.LambdaGBs, money(always), lambdaOnly.Poll.Held/3600, lambdaOnly.Poll.Held, lambdaOnly.Poll.Requests, money(perAgent),
		money(floor), z.MinTasks, money(marginal), conns, floor/(perAgent-marginal), 1000/(lambdaOnly.Poll.Held/3600))
}

// modeName is how the tables name a poll mode.
func modeName(mode string) string {
	if mode == modeLambda {
		return "Lambda-only (poll function URL)"
	}
	return "poll service (Fargate + ALB)"
}

// cpuText is the database CPU figure, or why there is none.
func cpuText(m mix) string {
	if !m.CPUKnown {
		return "(not measured)"
	}
	return fmt.Sprintf("%.3f", m.DBCPU)
}

// money writes dollars with cents, thousands grouped.
func money(usd float64) string {
	s := fmt.Sprintf("%.2f", usd)
	whole, cents, _ := strings.Cut(s, ".")
	return "$" + group(whole) + "." + cents
}
