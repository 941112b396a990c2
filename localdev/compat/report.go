package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Verdicts of a request.
const (
	verdictSame       = "same"
	verdictDeliberate = "deliberate"
	verdictDiffers    = "differs"
)

// result is what both servers answered to one request and how the
// answers differ; reasons[i] explains items[i] ("" when nothing does).
type result struct {
	req          request
	anchor, ours observed
	items        []item
	reasons      []string
}

func (r *result) verdict() string {
	if len(r.items) == 0 {
		return verdictSame
	}
	if slices.Contains(r.reasons, "") {
		return verdictDiffers
	}
	return verdictDeliberate
}

// comparison runs the suite against both servers and judges each answer
// against the table of deliberate differences.
type comparison struct {
	anchor, ours *target
	version      string
	table        []deliberate
	// producers maps a var to the last request that asked to save it, so
	// that a request that could not run for want of it on one side is
	// judged by the difference that caused it.
	producers map[string]*result
}

func (c *comparison) run(ctx context.Context, reqs []request) []*result {
	c.producers = map[string]*result{}
	results := make([]*result, 0, len(reqs))
	for _, req := range reqs {
		r := &result{req: req, anchor: c.observe(ctx, c.anchor, req), ours: c.observe(ctx, c.ours, req)}
		r.items = compare(r.anchor, r.ours)
		for _, it := range r.items {
			r.reasons = append(r.reasons, c.reason(r, it))
		}
		for name := range req.Save {
			c.producers[name] = r
		}
		results = append(results, r)
	}
	return results
}

// observe sends a request; a server that does not answer is observed as
// such, and the suite goes on.
func (c *comparison) observe(ctx context.Context, t *target, req request) observed {
	o, err := t.send(ctx, req)
	if err != nil {
		return observed{Kind: "no answer: " + err.Error()}
	}
	return o
}

// reason explains an item from the table, or, for a request that ran on
// one side only, from the deliberate difference that left the other side
// without what it needed.
func (c *comparison) reason(r *result, it item) string {
	if why := reasonFor(c.table, r.req.key(), c.version, it); why != "" {
		return why
	}
	if it.Path != "run" {
		return ""
	}
	missing := r.anchor.missing
	if missing == "" {
		missing = r.ours.missing
	}
	if p := c.producers[missing]; p != nil && p.verdict() == verdictDeliberate {
		return "needs {" + missing + "}, which " + p.req.key() + " (a deliberate difference) did not hand out"
	}
	return ""
}

// maxItems bounds the undeclared differences printed per request.
const maxItems = 12

// printDetails prints every request whose answers differ: each
// undeclared difference ("!"), then the deliberate ones ("~") grouped by
// their reason.
func printDetails(w io.Writer, results []*result) {
	for _, r := range results {
		if len(r.items) == 0 {
			continue
		}
		fmt.Fprintf(w, "%-10s %s  (%s %s)\n", strings.ToUpper(r.verdict()), r.req.key(), r.req.Method, r.req.Path)
		shown := 0
		var reasons []string
		byReason := map[string][]string{}
		for i, it := range r.items {
			why := r.reasons[i]
			if why != "" {
				if _, ok := byReason[why]; !ok {
					reasons = append(reasons, why)
				}
				byReason[why] = append(byReason[why], it.Path)
				continue
			}
			if shown == maxItems {
				fmt.Fprintln(w, "  ! … more")
			}
			if shown < maxItems {
				fmt.Fprintf(w, "  ! %s\n", it)
			}
			shown++
		}
		for _, why := range reasons {
			fmt.Fprintf(w, "  ~ %s: %s\n", cutPaths(byReason[why]), why)
		}
	}
}

// cutPaths lists the paths a reason covers, the first few only.
func cutPaths(paths []string) string {
	const few = 4
	if len(paths) <= few {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:few], ", "), len(paths)-few)
}

// familyCount is the tally of one route family.
type familyCount struct {
	Family                              string
	Requests, Same, Deliberate, Differs int
}

// tally counts verdicts per family, families in the order they first
// appear, with a total last.
func tally(results []*result) []familyCount {
	var counts []familyCount
	index := map[string]int{}
	total := familyCount{Family: "total"}
	for _, r := range results {
		i, ok := index[r.req.Family]
		if !ok {
			i = len(counts)
			index[r.req.Family] = i
			counts = append(counts, familyCount{Family: r.req.Family})
		}
		for _, fc := range []*familyCount{&counts[i], &total} {
			fc.Requests++
			switch r.verdict() {
			case verdictSame:
				fc.Same++
			case verdictDeliberate:
				fc.Deliberate++
			default:
				fc.Differs++
			}
		}
	}
	return append(counts, total)
}

// printTally prints the per-family table in Markdown.
func printTally(w io.Writer, counts []familyCount) {
	fmt.Fprintln(w, "| family | requests | same | deliberate | differs |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	for _, c := range counts {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d |\n", c.Family, c.Requests, c.Same, c.Deliberate, c.Differs)
	}
}
