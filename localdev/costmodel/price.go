package main

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// pricesDate is when the prices below were taken from AWS's public price
// pages. They are list prices (us-east-1, on demand, no free tier unless
// said) and change: check them before relying on the tables.
const pricesDate = "2026-12-03"

// prices are AWS's list prices in USD.
type prices struct {
	APIGatewayPerM, APIGatewayPerMAfter float64 // HTTP API, per million requests, first 300 M / after
	APIGatewayTier                      float64 // requests in the first tier
	LambdaPerM                          float64 // per million invocations
	LambdaGBs                           float64 // arm64, per GB-second
	FargateVCPUh, FargateGBh            float64 // arm64
	ALBHour, LCUHour                    float64
	ACUHour                             float64 // Aurora Serverless v2
	MinACU                              float64
	AuroraGBMonth, AuroraIOPerM         float64 // storage, I/O (Aurora Standard)
	NATHour, NATGB                      float64
	IPv4Hour                            float64 // a public IPv4 address
	LogsGB                              float64 // CloudWatch Logs ingestion
	// DataOut is data transfer out to the internet by tier: the first
	// DataOutFree GB a month free, then each tier's GB at its price.
	DataOutFree float64
	DataOut     []tier
}

// tier is up to GB gigabytes at PerGB.
type tier struct{ GB, PerGB float64 }

var listPrices = prices{
	APIGatewayPerM: 1.00, APIGatewayPerMAfter: 0.90, APIGatewayTier: 300e6,
	LambdaPerM: 0.20, LambdaGBs: 0.0000133334,
	FargateVCPUh: 0.03238, FargateGBh: 0.00356,
	ALBHour: 0.0225, LCUHour: 0.008,
	ACUHour: 0.12, MinACU: 0.5, AuroraGBMonth: 0.10, AuroraIOPerM: 0.20,
	NATHour: 0.045, NATGB: 0.045,
	IPv4Hour:    0.005,
	LogsGB:      0.50,
	DataOutFree: 100, DataOut: []tier{{10_000, 0.09}, {40_000, 0.085}, {100_000, 0.07}, {math.Inf(1), 0.05}},
}

// Assumptions of the model that no run measures.
const (
	// hoursPerMonth is AWS's billing month.
	hoursPerMonth = 730.0
	// vCPUPerACU: AWS says an ACU is about 2 GiB of memory "with
	// corresponding CPU"; the memory-optimised instances Aurora runs on
	// have 8 GiB per vCPU, so an ACU is taken as a quarter of a vCPU.
	vCPUPerACU = 0.25
	// walPerIO: Aurora counts a write I/O per 4 KiB of redo log it
	// persists; reads are taken to come from its cache (I/O 0).
	walPerIO = 4096.0
	// logBytesPerInvocation is what CloudWatch Logs ingests for each
	// Lambda invocation: the platform's START, END and REPORT lines
	// (about 270 bytes) plus 26 bytes of metering per event. The
	// functions themselves log nothing per request at LOG_LEVEL=info.
	logBytesPerInvocation = 350.0
	// natGBMonth is what passes the NAT gateway a month: the functions'
	// and tasks' calls to GitHub, Secrets Manager and KMS at cold starts,
	// image pulls. Small, and not measured: taken as 1 GB.
	natGBMonth = 1.0
	// livenessPerMonth is the liveness sweeper's invocations (once a
	// minute, scheduled).
	livenessPerMonth = 60 * hoursPerMonth
	// albAddresses are the load balancer's public IPv4 addresses (one per
	// zone, two zones); the NAT gateway has one more.
	albAddresses = 2
	// lcuConnections is an LCU's active connections (a minute's average);
	// its processed bytes are 1 GB an hour. New connections (25 a second)
	// and rule evaluations stay far under what the active connections
	// need: the agents keep their connections open.
	lcuConnections = 3000.0
)

// load is what one agent-hour asks of one part of the service.
type load struct {
	Requests float64
	// Billed is Lambda's billed seconds (each request rounded up to the
	// millisecond); for polls and streams, Held is the simulated seconds
	// they held their connection (and, on Lambda, their instance).
	Billed, Held float64
	Bytes        float64 // answered
}

// mix is one agent-hour as a pass measured it.
type mix struct {
	// API is what goes through API Gateway to each function (by route
	// group); Poll what goes to the poll base (long-polls and streams).
	API  map[string]load
	Poll load
	// DBCPU is PostgreSQL's CPU seconds; CPUKnown false when unmeasured.
	DBCPU    float64
	CPUKnown bool
	WAL      float64 // bytes of WAL
	Growth   float64 // bytes the database grew
}

// apiRequests is the requests through API Gateway.
func (m mix) apiRequests() float64 {
	n := 0.0
	for _, l := range m.API {
		n += l.Requests
	}
	return n
}

// apiBytes is the bytes answered through API Gateway.
func (m mix) apiBytes() float64 {
	n := 0.0
	for _, l := range m.API {
		n += l.Bytes
	}
	return n
}

// sizing is what template.yaml deploys: function memory and the poll
// service's task and scaling.
type sizing struct {
	MemoryMB     map[string]int // by route group (rooms, messages, …, poll)
	TaskVCPU     float64
	TaskGB       float64
	ConnsPerTask float64
	MinTasks     float64
}

// costLine is one item of a monthly bill, with its arithmetic.
type costLine struct {
	Item, Formula string
	USD           float64
}

// Poll modes: where long-polls and streams go.
const (
	modeFargate = "fargate" // the poll service: ECS on Fargate behind an ALB
	modeLambda  = "lambda"  // the poll function behind its Function URL
)

// monthly is the bill of n agents for a month, the poll mode's lines
// among the rest.
func monthly(m mix, z sizing, p prices, n float64, mode string) []costLine {
	h := n * hoursPerMonth // agent-hours
	var out []costLine
	add := func(item, formula string, usd float64) { out = append(out, costLine{item, formula, usd}) }

	reqs := m.apiRequests() * h
	first := math.Min(reqs, p.APIGatewayTier)
	add("API Gateway (HTTP API)", fmt.Sprintf("%s req per agent-h × %s agent-h = %s × $%.2f/M%s",
		num(m.apiRequests()), num(h), count(reqs), p.APIGatewayPerM, afterTier(reqs, p)),
		first/1e6*p.APIGatewayPerM+math.Max(reqs-p.APIGatewayTier, 0)/1e6*p.APIGatewayPerMAfter)

	invocations := reqs + livenessPerMonth
	add("Lambda requests", fmt.Sprintf("(%s + %s liveness) × $%.2f/M", count(reqs), count(livenessPerMonth), p.LambdaPerM),
		invocations/1e6*p.LambdaPerM)
	gbs, terms := 0.0, []string{}
	for _, g := range slices.Sorted(maps.Keys(m.API)) {
		l := m.API[g]
		gb := float64(z.MemoryMB[g]) / 1024
		gbs += l.Billed * h * gb
		terms = append(terms, fmt.Sprintf("%s %.3f s×%g GB", g, l.Billed, gb))
	}
	add("Lambda compute", fmt.Sprintf("(%s) per agent-h × %s agent-h = %s GB-s × $%g", strings.Join(terms, " + "), num(h), num(gbs), p.LambdaGBs),
		gbs*p.LambdaGBs)

	switch mode {
	case modeFargate:
		conns := m.Poll.Held / 3600 * n
		tasks := math.Max(z.MinTasks, math.Ceil(conns/z.ConnsPerTask))
		perTask := (z.TaskVCPU*p.FargateVCPUh + z.TaskGB*p.FargateGBh) * hoursPerMonth
		add("Fargate poll tasks", fmt.Sprintf("%s parked connections ÷ %g a task → %g × (%g vCPU × $%g + %g GB × $%g) × 730 h",
			num(conns), z.ConnsPerTask, tasks, z.TaskVCPU, p.FargateVCPUh, z.TaskGB, p.FargateGBh), tasks*perTask)
		gbHour := m.Poll.Bytes * n / 1e9
		lcu := math.Max(conns/lcuConnections, gbHour)
		add("ALB", fmt.Sprintf("$%g × 730 h + %s LCU (max of %s conn ÷ 3,000, %s GB/h) × $%g × 730 h",
			p.ALBHour, num(lcu), num(conns), num(gbHour), p.LCUHour), (p.ALBHour+lcu*p.LCUHour)*hoursPerMonth)
	case modeLambda:
		polls := m.Poll.Requests * h
		gb := float64(z.MemoryMB["poll"]) / 1024
		held := m.Poll.Held * h * gb
		add("Lambda poll function (Function URL)", fmt.Sprintf("%s req × $%.2f/M + %.0f s held × %s agent-h × %g GB = %s GB-s × $%g",
			count(polls), p.LambdaPerM, m.Poll.Held, num(h), gb, num(held), p.LambdaGBs), polls/1e6*p.LambdaPerM+held*p.LambdaGBs)
	}

	acu, how := p.MinACU, "the minimum"
	if m.CPUKnown {
		vcpu := m.DBCPU * n / 3600
		acu = math.Max(p.MinACU, math.Ceil(vcpu/vCPUPerACU*2)/2)
		how = fmt.Sprintf("%.3f CPU-s per agent-h × %s ÷ 3,600 = %s vCPU ÷ %g", m.DBCPU, num(n), num(vcpu), vCPUPerACU)
	}
	add("Aurora Serverless v2 compute", fmt.Sprintf("%g ACU (%s) × $%.2f × 730 h", acu, how, p.ACUHour), acu*p.ACUHour*hoursPerMonth)
	stored := m.Growth * h / 1e9
	add("Aurora storage", fmt.Sprintf("%s B per agent-h × %s agent-h = %s GB (a month of data) × $%.2f", num(m.Growth), num(h), num(stored), p.AuroraGBMonth),
		stored*p.AuroraGBMonth)
	ios := m.WAL / walPerIO * h
	add("Aurora I/O", fmt.Sprintf("%s B WAL per agent-h ÷ 4 KiB × %s agent-h = %s × $%.2f/M", num(m.WAL), num(h), count(ios), p.AuroraIOPerM),
		ios/1e6*p.AuroraIOPerM)

	add("NAT gateway", fmt.Sprintf("$%g × 730 h + %g GB × $%g", p.NATHour, natGBMonth, p.NATGB), p.NATHour*hoursPerMonth+natGBMonth*p.NATGB)
	addresses := 1.0
	if mode == modeFargate {
		addresses += albAddresses
	}
	add("public IPv4", fmt.Sprintf("%g × $%g × 730 h", addresses, p.IPv4Hour), addresses*p.IPv4Hour*hoursPerMonth)

	outGB := (m.apiBytes() + m.Poll.Bytes) * h / 1e9
	add("data out", fmt.Sprintf("%s GB, first %g free", num(outGB), p.DataOutFree), dataOut(outGB, p))
	logsGB := invocations * logBytesPerInvocation / 1e9
	if mode == modeLambda {
		logsGB += m.Poll.Requests * h * logBytesPerInvocation / 1e9
	}
	add("CloudWatch Logs (Lambda's lines)", fmt.Sprintf("%s GB × $%.2f", num(logsGB), p.LogsGB), logsGB*p.LogsGB)
	return out
}

// total adds a bill up.
func total(lines []costLine) float64 {
	t := 0.0
	for _, l := range lines {
		t += l.USD
	}
	return t
}

// afterTier is the second tier of API Gateway's price, when reached.
func afterTier(reqs float64, p prices) string {
	if reqs <= p.APIGatewayTier {
		return ""
	}
	return fmt.Sprintf(" (first %s), then $%.2f/M", count(p.APIGatewayTier), p.APIGatewayPerMAfter)
}

// dataOut prices gb of data out through the tiers.
func dataOut(gb float64, p prices) float64 {
	left, usd := math.Max(gb-p.DataOutFree, 0), 0.0
	for _, t := range p.DataOut {
		in := math.Min(left, t.GB)
		usd += in * t.PerGB
		if left -= in; left <= 0 {
			break
		}
	}
	return usd
}

// num writes a number for a formula: thousands grouped, a few digits.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 100:
		return group(fmt.Sprintf("%.0f", v))
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

// count writes a large count in thousands (k), millions (M) or billions
// (G).
func count(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return fmt.Sprintf("%.3g G", v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3g M", v/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.3g k", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

// group puts thousands separators into an integer's digits.
func group(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
