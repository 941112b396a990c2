package main

import (
	"math"
	"strings"
	"testing"
)

// TestMonthly prices a known agent-hour: every line of the bill, in both
// poll modes, below and above the price tiers, worked out by hand.
func TestMonthly(t *testing.T) {
	m := mix{
		API:      map[string]load{"messages": {Requests: 100, Billed: 1.0, Bytes: 1000}},
		Poll:     load{Requests: 120, Held: 3600, Bytes: 1000},
		DBCPU:    0.36,
		CPUKnown: true,
		WAL:      4096,
		Growth:   1000,
	}
	z := sizing{MemoryMB: map[string]int{"messages": 1024, "poll": 512}, TaskVCPU: 0.5, TaskGB: 1, ConnsPerTask: 2000, MinTasks: 1}
	task := (0.5*0.03238 + 1*0.00356) * 730
	for _, c := range []struct {
		name string
		n    float64
		mode string
		want map[string]float64
	}{
		{"10 agents, poll service", 10, modeFargate, map[string]float64{
			"API Gateway (HTTP API)":           100 * 7300 / 1e6,
			"Lambda requests":                  (730_000 + 43_800) * 0.20 / 1e6,
			"Lambda compute":                   7300 * 0.0000133334,
			"Fargate poll tasks":               task,
			"ALB":                              (0.0225 + 10.0/3000*0.008) * 730,
			"Aurora Serverless v2 compute":     0.5 * 0.12 * 730,
			"Aurora storage":                   1000 * 7300 / 1e9 * 0.10,
			"Aurora I/O":                       7300 * 0.20 / 1e6,
			"NAT gateway":                      0.045*730 + 0.045,
			"public IPv4":                      3 * 0.005 * 730,
			"data out":                         0,
			"CloudWatch Logs (Lambda's lines)": 773_800 * 350 / 1e9 * 0.50,
		}},
		{"10 agents, Lambda-only", 10, modeLambda, map[string]float64{
			"API Gateway (HTTP API)":              100 * 7300 / 1e6,
			"Lambda requests":                     (730_000 + 43_800) * 0.20 / 1e6,
			"Lambda compute":                      7300 * 0.0000133334,
			"Lambda poll function (Function URL)": 876_000*0.20/1e6 + 3600*7300*0.5*0.0000133334,
			"Aurora Serverless v2 compute":        0.5 * 0.12 * 730,
			"Aurora storage":                      1000 * 7300 / 1e9 * 0.10,
			"Aurora I/O":                          7300 * 0.20 / 1e6,
			"NAT gateway":                         0.045*730 + 0.045,
			"public IPv4":                         1 * 0.005 * 730,
			"data out":                            0,
			"CloudWatch Logs (Lambda's lines)":    (773_800 + 876_000) * 350 / 1e9 * 0.50,
		}},
		{"100,000 agents, poll service: second tiers, many tasks, ACUs from CPU", 100_000, modeFargate, map[string]float64{
			"API Gateway (HTTP API)":           300 + (7.3e9-3e8)/1e6*0.90,
			"Lambda requests":                  (7.3e9 + 43_800) * 0.20 / 1e6,
			"Lambda compute":                   73e6 * 0.0000133334,
			"Fargate poll tasks":               50 * task,
			"ALB":                              (0.0225 + 100_000.0/3000*0.008) * 730,
			"Aurora Serverless v2 compute":     40 * 0.12 * 730,
			"Aurora storage":                   1000 * 73e6 / 1e9 * 0.10,
			"Aurora I/O":                       73e6 * 0.20 / 1e6,
			"NAT gateway":                      0.045*730 + 0.045,
			"public IPv4":                      3 * 0.005 * 730,
			"data out":                         (146 - 100) * 0.09,
			"CloudWatch Logs (Lambda's lines)": (7.3e9 + 43_800) * 350 / 1e9 * 0.50,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			lines := monthly(m, z, listPrices, c.n, c.mode)
			got := map[string]float64{}
			for _, l := range lines {
				if l.Formula == "" {
					t.Errorf("%s has no arithmetic", l.Item)
				}
				got[l.Item] = l.USD
			}
			for item, want := range c.want {
				if g, ok := got[item]; !ok || math.Abs(g-want) > 1e-9*math.Max(1, want) {
					t.Errorf("%s = %v, want %v", item, g, want)
				}
			}
			for item := range got {
				if _, ok := c.want[item]; !ok {
					t.Errorf("unexpected line %s", item)
				}
			}
		})
	}
}

// TestMonthlyWithoutCPU: an unmeasured database is priced at Aurora's
// minimum and says so.
func TestMonthlyWithoutCPU(t *testing.T) {
	m := mix{API: map[string]load{}, DBCPU: 99}
	z := sizing{MemoryMB: map[string]int{}, ConnsPerTask: 1, MinTasks: 1}
	for _, l := range monthly(m, z, listPrices, 1e6, modeFargate) {
		if l.Item == "Aurora Serverless v2 compute" && (l.USD != 0.5*0.12*730 || !strings.Contains(l.Formula, "the minimum")) {
			t.Errorf("Aurora compute without CPU: %v %q, want the minimum", l.USD, l.Formula)
		}
	}
}

// TestDataOut walks the tiers of data out.
func TestDataOut(t *testing.T) {
	for _, c := range []struct{ gb, want float64 }{
		{0, 0}, {100, 0}, {101, 0.09}, {10_100, 900}, {50_100, 900 + 3400}, {146_000, 900 + 3400 + 95_900*0.07},
		{250_100, 900 + 3400 + 7000 + 100_000*0.05},
	} {
		if got := dataOut(c.gb, listPrices); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("dataOut(%v GB) = %v, want %v", c.gb, got, c.want)
		}
	}
}

func TestNumbersInFormulas(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{num(0), "0"}, {num(0.00302), "0.00302"}, {num(3.348), "3.35"}, {num(1234567), "1,234,567"}, {num(-2500), "-2,500"},
		{count(43_800), "43.8 k"}, {count(2.68e6), "2.68 M"}, {count(2.68e10), "26.8 G"}, {count(12), "12"},
		{money(1761856.934), "$1,761,856.93"}, {money(0.5), "$0.50"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
