package infra

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/migrations"
	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/db"
	"github.com/letagents/letagents-go/shared/httpserver"
	"github.com/letagents/letagents-go/shared/service"
)

// The checks of what is deployed besides the functions: the Migrate
// resource, the poll server (ECS on Fargate behind a load balancer, its
// image) and RDS Proxy. They read resources as plain JSON (raw), a few
// properties of many types.

// Logical ids the checks look for.
const (
	pollTaskDefinition = "PollTaskDefinition"
	pollService        = "PollService"
	pollTaskRole       = "PollTaskRole"
	pollExecutionRole  = "PollExecutionRole"
	pollTaskSG         = "PollTaskSecurityGroup"
	pollBalancerSG     = "PollLoadBalancerSecurityGroup"
	migrateResource    = "Migrate"
	// pollDockerfile builds the poll server's image; imageTarget is the
	// Makefile target that runs it.
	pollDockerfile = "functions/poll/Dockerfile"
	imageTarget    = "image-poll"
	// loadBalancerIdle is the load balancer attribute bounding how long a
	// connection may sit without a byte, a parked long-poll's whole life.
	loadBalancerIdle = "idle_timeout.timeout_seconds"
)

// raw is a resource as plain JSON values: Type, Properties, DependsOn,
// Condition (nil when there is no such resource).
func (p parsed) raw(t *testing.T, name string) map[string]any {
	t.Helper()
	res, ok := p.tmpl.Resources[name]
	if !ok {
		return nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// dig walks v by map keys (strings) and list indexes (ints); nil when a
// step is missing.
func dig(v any, path ...any) any {
	for _, step := range path {
		switch k := step.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func num(v any) float64 {
	f, _ := strconv.ParseFloat(fmt.Sprint(v), 64)
	return f
}

// dependsOn is a resource's DependsOn, one name or a list.
func dependsOn(r map[string]any) []string {
	var out []string
	switch d := r["DependsOn"].(type) {
	case string:
		out = append(out, d)
	case []any:
		for _, x := range d {
			out = append(out, fmt.Sprint(x))
		}
	}
	return out
}

// container is the poll server's one container.
type container struct {
	raw  map[string]any
	name string
	port float64
	env  map[string]string
}

func (p parsed) container(t *testing.T) (container, bool) {
	td := p.raw(t, pollTaskDefinition)
	defs, _ := dig(td, "Properties", "ContainerDefinitions").([]any)
	if len(defs) != 1 {
		return container{}, false
	}
	c := container{raw: defs[0].(map[string]any), env: map[string]string{}}
	c.name, _ = c.raw["Name"].(string)
	c.port = num(dig(c.raw, "PortMappings", 0, "ContainerPort"))
	env, _ := c.raw["Environment"].([]any)
	for _, kv := range env {
		c.env[fmt.Sprint(dig(kv, "Name"))] = fmt.Sprint(dig(kv, "Value"))
	}
	return c, true
}

// grants summarises a role's inline policies as "action resource" lines.
func grants(role map[string]any) []string {
	var out []string
	pols, _ := dig(role, "Properties", "Policies").([]any)
	for _, pol := range pols {
		sts, _ := dig(pol, "PolicyDocument", "Statement").([]any)
		for _, st := range sts {
			if dig(st, "Effect") != "Allow" {
				continue
			}
			actions := []any{dig(st, "Action")}
			if l, ok := dig(st, "Action").([]any); ok {
				actions = l
			}
			for _, a := range actions {
				out = append(out, fmt.Sprint(a, " ", dig(st, "Resource")))
			}
		}
	}
	slices.Sort(out)
	return out
}

// trusted is the service principal a role's trust policy names.
func trusted(role map[string]any) string {
	return fmt.Sprint(dig(role, "Properties", "AssumeRolePolicyDocument", "Statement", 0, "Principal", "Service"))
}

// checkMigrate: the Migrate custom resource runs the migrate function
// with the newest migration's number, and everything that serves waits
// for it.
func checkMigrate(t *testing.T, p parsed, fnName string) {
	fn := p.fns[fnName]
	if fn == nil {
		return // reported by TestTemplate
	}
	if len(fn.Events) > 0 {
		t.Errorf("%s has events %v; only the Migrate resource invokes it", fnName, slices.Sorted(maps.Keys(fn.Events)))
	}
	latest, err := db.Latest(migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	m := p.raw(t, migrateResource)
	timeout := time.Duration(firstInt(fn.Timeout, p.global.Timeout)) * time.Second
	switch {
	case m == nil:
		t.Fatalf("template.yaml has no %s resource: nothing applies the migrations", migrateResource)
	case m["Type"] != "Custom::Migrate" || dig(m, "Properties", "ServiceToken") != getAttOf(fnName+".Arn"):
		t.Errorf("%s = %v, want a Custom::Migrate whose ServiceToken is !GetAtt %s.Arn", migrateResource, m, fnName)
	case dig(m, "Properties", "SchemaVersion") != strconv.Itoa(latest):
		t.Errorf("%s SchemaVersion = %v, want %q, the newest migration: CloudFormation runs the migrations when it changes",
			migrateResource, dig(m, "Properties", "SchemaVersion"), strconv.Itoa(latest))
	case time.Duration(num(dig(m, "Properties", "ServiceTimeout")))*time.Second <= timeout:
		t.Errorf("%s ServiceTimeout %v s, want more than %s's Timeout %v", migrateResource, dig(m, "Properties", "ServiceTimeout"), fnName, timeout)
	}
	b, err := os.ReadFile(filepath.Join(root, "functions", migrateDir, "event.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		ResourceType       string
		ResourceProperties map[string]any
	}
	if err := json.Unmarshal(b, &ev); err != nil || ev.ResourceType != "Custom::Migrate" || ev.ResourceProperties["SchemaVersion"] != strconv.Itoa(latest) {
		t.Errorf("functions/migrate/event.json: %s; want a Custom::Migrate request with SchemaVersion %q (%v)", b, strconv.Itoa(latest), err)
	}
	// No new build may serve before its schema is in place.
	for _, name := range append(slices.Sorted(maps.Keys(p.fns)), pollService) {
		deps := dependsOn(p.raw(t, name))
		if name == fnName {
			if slices.Contains(deps, migrateResource) {
				t.Errorf("%s depends on %s, which it serves: a cycle", name, migrateResource)
			}
			continue
		}
		if !slices.Contains(deps, migrateResource) {
			t.Errorf("%s: DependsOn %v, want %s among them", name, deps, migrateResource)
		}
	}
}

// checkPollServer holds the poll server (ECS on Fargate behind an ALB) to
// the code: its image builds functions/poll, its port, health path and
// environment are the server's, its roles grant what the poll function's
// policies do, its network admits only the load balancer.
func checkPollServer(t *testing.T, p parsed, pollFn string, _ map[string][]string) {
	c, ok := p.container(t)
	if !ok {
		t.Fatalf("%s should have exactly one container", pollTaskDefinition)
	}
	for _, res := range []string{pollTaskDefinition, pollService, pollTaskRole, pollExecutionRole, pollTaskSG, pollBalancerSG,
		"PollLoadBalancer", "PollTargetGroup", "PollListener", "PollCluster", "PollScalableTarget", "PollScalingPolicy", "PollCpuScalingPolicy"} {
		if r := p.raw(t, res); r == nil || r["Condition"] != "WithContainer" {
			t.Errorf("%s: missing, or not under the condition WithContainer (no image, no poll server)", res)
		}
	}

	// The server listens on config.Config's default port: the task
	// does not set PORT, and maps that port.
	def, err := config.Load(getenv(nil))
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(def.Addr, ":")
	if _, set := c.env["PORT"]; set || fmt.Sprint(c.port) != port {
		t.Errorf("container %s: port %v (PORT set: %v), want the server's default %s, PORT unset", c.name, c.port, set, port)
	}
	if c.raw["Image"] != refTo("PollImageUri") || c.raw["ReadonlyRootFilesystem"] != true || c.raw["Essential"] != true {
		t.Errorf("container %s: Image %v, ReadonlyRootFilesystem %v, Essential %v; want !Ref PollImageUri, true, true",
			c.name, c.raw["Image"], c.raw["ReadonlyRootFilesystem"], c.raw["Essential"])
	}
	if stop := time.Duration(num(c.raw["StopTimeout"])) * time.Second; stop <= httpserver.ShutdownGrace || stop > 120*time.Second {
		t.Errorf("container %s: StopTimeout %v, want above the server's grace %v and at most Fargate's 120 s", c.name, stop, httpserver.ShutdownGrace)
	}

	// Its environment is the poll function's, less what only a Lambda
	// behind the gateway needs and the proxy (the listener connects
	// directly), plus the idle timeout a load balancer calls for and the
	// balancer's one hop in X-Forwarded-For (the hosted MCP endpoint
	// counts each agent by the address it saw).
	fnEnv := p.env(p.fns[pollFn])
	want := map[string]bool{"LETAGENTS_IDLE_TIMEOUT_MS": true, "LETAGENTS_PROXY_HOPS": true}
	if c.env["LETAGENTS_PROXY_HOPS"] != "1" {
		t.Errorf("container %s: LETAGENTS_PROXY_HOPS = %q, want 1: its load balancer", c.name, c.env["LETAGENTS_PROXY_HOPS"])
	}
	for k := range fnEnv {
		want[k] = true
	}
	for _, k := range []string{"LETAGENTS_GATEWAY_HOLD_MS", "DB_URL", "DB_PROXY_HOST"} {
		delete(want, k)
	}
	if got := slices.Sorted(maps.Keys(c.env)); !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
		t.Errorf("container %s sets %v, want %v", c.name, got, slices.Sorted(maps.Keys(want)))
	}
	for k, v := range c.env {
		if fv, ok := fnEnv[k]; ok && k != "DB_MAX_CONNS" && fv != v {
			t.Errorf("container %s: %s = %q, but the poll function has %q", c.name, k, v, fv)
		}
	}
	cfg, err := config.Load(getenv(p.resolved(c.env)))
	if err != nil {
		t.Fatalf("container %s: its environment does not load: %v", c.name, err)
	}

	// Timeouts: the balancer outlasts any long-poll; the server's idle
	// keep-alive outlasts the balancer's; the drain outlasts a default poll.
	idle := 0.0
	attrs, _ := dig(p.raw(t, "PollLoadBalancer"), "Properties", "LoadBalancerAttributes").([]any)
	for _, a := range attrs {
		if dig(a, "Key") == loadBalancerIdle {
			idle = num(dig(a, "Value"))
		}
	}
	balancerIdle := time.Duration(idle) * time.Second
	pollParam, _ := paramOf(fnEnv["LETAGENTS_POLL_MAX_MS"])
	maxPoll := time.Duration(deref(p.tmpl.Parameters[pollParam].MaxValue).(float64)) * time.Millisecond
	if balancerIdle <= maxPoll {
		t.Errorf("load balancer %s = %v, want above the longest long-poll, %v (parameter %s's MaxValue)", loadBalancerIdle, balancerIdle, maxPoll, pollParam)
	}
	if cfg.IdleTimeout <= balancerIdle {
		t.Errorf("container %s: LETAGENTS_IDLE_TIMEOUT_MS %v, want above the load balancer's idle timeout %v", c.name, cfg.IdleTimeout, balancerIdle)
	}

	tg := p.raw(t, "PollTargetGroup")
	// Liveness, not readiness: a database failover must not fail every
	// task's check at once and have ECS replace them all.
	if dig(tg, "Properties", "HealthCheckPath") != service.LivePath || num(dig(tg, "Properties", "Port")) != c.port ||
		dig(tg, "Properties", "TargetType") != "ip" || dig(tg, "Properties", "Matcher", "HttpCode") != "200" {
		t.Errorf("PollTargetGroup = %v; want health check GET %s (200), port %v, target type ip", dig(tg, "Properties"), service.LivePath, c.port)
	}
	var drain string
	tgAttrs, _ := dig(tg, "Properties", "TargetGroupAttributes").([]any)
	for _, a := range tgAttrs {
		if dig(a, "Key") == "deregistration_delay.timeout_seconds" {
			drain = fmt.Sprint(dig(a, "Value"))
		}
	}
	if param, ok := paramOf(drain); !ok {
		t.Errorf("PollTargetGroup: deregistration delay %q, want a parameter", drain)
	} else if d := time.Duration(num(p.tmpl.Parameters[param].Default)) * time.Second; d <= cfg.PollMax {
		t.Errorf("parameter %s defaults to %v, want above the default poll maximum %v: a draining task's polls would be cut", param, d, cfg.PollMax)
	}
	l := p.raw(t, "PollListener")
	if dig(l, "Properties", "DefaultActions", 0, "TargetGroupArn") != refTo("PollTargetGroup") || dig(l, "Properties", "LoadBalancerArn") != refTo("PollLoadBalancer") {
		t.Errorf("PollListener should forward PollLoadBalancer's requests to PollTargetGroup: %v", dig(l, "Properties"))
	}

	svc := p.raw(t, pollService)
	lb := dig(svc, "Properties", "LoadBalancers", 0)
	if dig(lb, "ContainerName") != c.name || num(dig(lb, "ContainerPort")) != c.port || dig(lb, "TargetGroupArn") != refTo("PollTargetGroup") ||
		dig(svc, "Properties", "LaunchType") != "FARGATE" || !slices.Contains(dependsOn(svc), "PollListener") {
		t.Errorf("%s: load balancer %v, launch type %v, DependsOn %v; want container %s:%v in PollTargetGroup, FARGATE, after PollListener",
			pollService, lb, dig(svc, "Properties", "LaunchType"), dependsOn(svc), c.name, c.port)
	}
	if sgs := fmt.Sprint(dig(svc, "Properties", "NetworkConfiguration", "AwsvpcConfiguration", "SecurityGroups")); sgs != fmt.Sprint([]any{refTo(pollTaskSG)}) {
		t.Errorf("%s: security groups %s, want only %s", pollService, sgs, pollTaskSG)
	}
	sp := p.raw(t, "PollScalingPolicy")
	if b, _ := json.Marshal(sp); !strings.Contains(string(b), `"MetricName":"ActiveConnectionCount"`) {
		t.Errorf("PollScalingPolicy should track open connections (ActiveConnectionCount): %s", b)
	}
	// A task short of CPU waits on its quota whatever its connections: the
	// service scales out on CPU too.
	cp := p.raw(t, "PollCpuScalingPolicy")
	if dig(cp, "Properties", "ScalingTargetId") != refTo("PollScalableTarget") ||
		dig(cp, "Properties", "TargetTrackingScalingPolicyConfiguration", "PredefinedMetricSpecification", "PredefinedMetricType") != "ECSServiceAverageCPUUtilization" {
		t.Errorf("PollCpuScalingPolicy should track the service's CPU (ECSServiceAverageCPUUtilization) on PollScalableTarget: %v", dig(cp, "Properties"))
	}

	td := p.raw(t, pollTaskDefinition)
	if dig(td, "Properties", "RuntimePlatform", "CpuArchitecture") != "ARM64" || dig(td, "Properties", "NetworkMode") != "awsvpc" ||
		dig(td, "Properties", "TaskRoleArn") != getAttOf(pollTaskRole+".Arn") || dig(td, "Properties", "ExecutionRoleArn") != getAttOf(pollExecutionRole+".Arn") {
		t.Errorf("%s: %v; want ARM64 (as make %s builds), awsvpc, task role %s, execution role %s",
			pollTaskDefinition, dig(td, "Properties"), imageTarget, pollTaskRole, pollExecutionRole)
	}

	// The task may do what the poll function may, and seal with the token
	// key (its hosted MCP endpoint vouches for its agents' addresses), no
	// more.
	var got []string
	for _, g := range grants(p.raw(t, pollTaskRole)) {
		switch g {
		case "secretsmanager:GetSecretValue " + createdSecret:
			got = append(got, "secret "+dbSecret)
		case "kms:Decrypt " + getAttOf(tokenKey+".Arn"):
			got = append(got, "decrypt "+tokenKey)
		case "kms:GenerateDataKey " + getAttOf(tokenKey+".Arn"):
			got = append(got, "generate-data-key "+tokenKey)
		default:
			got = append(got, g)
		}
	}
	if want := slices.Sorted(slices.Values(append(slices.Clone(wantPolicies[api.GroupPoll]), "generate-data-key "+tokenKey))); !slices.Equal(got, want) {
		t.Errorf("%s grants %q, want exactly the poll function's and generate-data-key %q", pollTaskRole, got, want)
	}
	wantExec := []string{
		"ecr:BatchCheckLayerAvailability arn:${AWS::Partition}:ecr:${AWS::Region}:${AWS::AccountId}:repository/*",
		"ecr:BatchGetImage arn:${AWS::Partition}:ecr:${AWS::Region}:${AWS::AccountId}:repository/*",
		"ecr:GetAuthorizationToken *",
		"ecr:GetDownloadUrlForLayer arn:${AWS::Partition}:ecr:${AWS::Region}:${AWS::AccountId}:repository/*",
		"logs:CreateLogStream " + getAttOf("PollLogGroup.Arn"),
		"logs:PutLogEvents " + getAttOf("PollLogGroup.Arn"),
	}
	if g := grants(p.raw(t, pollExecutionRole)); !slices.Equal(g, wantExec) {
		t.Errorf("%s grants %q, want exactly %q (pull an image of this account, write the task's log group)", pollExecutionRole, g, wantExec)
	}
	for _, role := range []string{pollTaskRole, pollExecutionRole} {
		r := p.raw(t, role)
		if trusted(r) != "ecs-tasks.amazonaws.com" || dig(r, "Properties", "ManagedPolicyArns") != nil {
			t.Errorf("%s: trusts %s, managed policies %v; want ecs-tasks.amazonaws.com and none", role, trusted(r), dig(r, "Properties", "ManagedPolicyArns"))
		}
	}

	checkNetwork(t, p, c)
	checkImage(t, p, c)
}

// checkNetwork: every security group states its egress (none falls back
// to allow-all), no rule opens every protocol, the tasks admit the load
// balancer only, on the container's port, and the balancer reaches the
// tasks only.
func checkNetwork(t *testing.T, p parsed, c container) {
	for _, name := range slices.Sorted(maps.Keys(p.tmpl.Resources)) {
		r := p.raw(t, name)
		if r["Type"] == "AWS::EC2::SecurityGroup" && dig(r, "Properties", "SecurityGroupEgress") == nil {
			t.Errorf("%s has no SecurityGroupEgress: it would allow every egress", name)
		}
		if b, _ := json.Marshal(r); strings.Contains(string(b), `"IpProtocol":"-1"`) {
			t.Errorf("%s has a rule for every protocol", name)
		}
	}
	if in := dig(p.raw(t, pollTaskSG), "Properties", "SecurityGroupIngress"); in != nil {
		t.Errorf("%s has inline ingress %v; the tasks admit the load balancer only (PollTaskFromLoadBalancer)", pollTaskSG, in)
	}
	var sources []string
	for _, name := range slices.Sorted(maps.Keys(p.tmpl.Resources)) {
		r := p.raw(t, name)
		if r["Type"] != "AWS::EC2::SecurityGroupIngress" || dig(r, "Properties", "GroupId") != refTo(pollTaskSG) {
			continue
		}
		sources = append(sources, fmt.Sprint(dig(r, "Properties", "SourceSecurityGroupId"), ":", dig(r, "Properties", "FromPort"), "-", dig(r, "Properties", "ToPort")))
	}
	port := strconv.Itoa(int(c.port))
	if want := []string{refTo(pollBalancerSG) + ":" + port + "-" + port}; !slices.Equal(sources, want) {
		t.Errorf("%s admits %v, want only %v", pollTaskSG, sources, want)
	}
	egress, _ := dig(p.raw(t, pollBalancerSG), "Properties", "SecurityGroupEgress").([]any)
	if len(egress) != 1 || dig(egress[0], "DestinationSecurityGroupId") != refTo(pollTaskSG) || fmt.Sprint(num(dig(egress[0], "FromPort"))) != port {
		t.Errorf("%s egress %v, want only %s on %s", pollBalancerSG, egress, pollTaskSG, port)
	}
}

// checkImage: the Makefile target builds the Dockerfile for the task's
// architecture; the Dockerfile builds functions/poll statically onto a
// minimal base, copies every package it imports, and exposes the task's
// port.
func checkImage(t *testing.T, p parsed, c container) {
	recipe := strings.Join(makeTarget(t, imageTarget), "\n")
	for _, want := range []string{"docker build", "--platform linux/arm64", "-f " + pollDockerfile} {
		if !strings.Contains(recipe, want) {
			t.Errorf("make %s: recipe %q lacks %q (the task runs ARM64)", imageTarget, recipe, want)
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(recipe), " .") {
		t.Errorf("make %s: recipe %q should build from the module root (context .)", imageTarget, recipe)
	}

	b, err := os.ReadFile(filepath.Join(root, pollDockerfile))
	if err != nil {
		t.Fatal(err)
	}
	var froms, copies, runs, exposes, entry []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch rest := strings.Join(f[1:], " "); strings.ToUpper(f[0]) {
		case "FROM":
			froms = append(froms, rest)
		case "COPY":
			if !strings.HasPrefix(f[1], "--from") {
				copies = append(copies, f[1:len(f)-1]...)
			}
		case "RUN":
			runs = append(runs, rest)
		case "EXPOSE":
			exposes = append(exposes, rest)
		case "ENTRYPOINT":
			entry = append(entry, rest)
		}
	}
	if len(froms) == 0 || !strings.HasPrefix(froms[len(froms)-1], "gcr.io/distroless/static") {
		t.Errorf("%s: final stage FROM %v, want a distroless static base", pollDockerfile, froms)
	}
	if !slices.ContainsFunc(runs, func(r string) bool {
		return strings.Contains(r, "CGO_ENABLED=0") && strings.Contains(r, "go build") && strings.HasSuffix(r, "./functions/poll")
	}) {
		t.Errorf("%s: no RUN builds ./functions/poll with CGO_ENABLED=0 (a static binary): %q", pollDockerfile, runs)
	}
	if want := strconv.Itoa(int(c.port)); !slices.Equal(exposes, []string{want}) {
		t.Errorf("%s: EXPOSE %v, want %s, the task's port", pollDockerfile, exposes, want)
	}
	if len(entry) != 1 || !strings.HasPrefix(entry[0], "[") {
		t.Errorf("%s: ENTRYPOINT %v, want the exec form, so the server is PID 1 and gets SIGTERM", pollDockerfile, entry)
	}

	// Every package of the module the binary imports is in the context.
	cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", "./functions/poll")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./functions/poll: %v", err)
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(absRoot, dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue // a module dependency: go mod download fetches it
		}
		rel = filepath.ToSlash(rel)
		if !slices.ContainsFunc(copies, func(src string) bool { return rel == src || strings.HasPrefix(rel, src+"/") }) {
			t.Errorf("%s copies %v, which lacks %s (imported by functions/poll)", pollDockerfile, copies, rel)
		}
	}
	for _, src := range copies {
		if !regexp.MustCompile(`(?m)^!` + regexp.QuoteMeta(src) + `/?$`).Match(ignore) {
			t.Errorf(".dockerignore does not let %s (copied by %s) into the build context", src, pollDockerfile)
		}
	}
}

// makeTarget returns a Makefile target's recipe lines, wherever it is.
func makeTarget(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var recipe []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, name+":"):
			in = true
		case in && strings.HasPrefix(line, "\t"):
			recipe = append(recipe, strings.TrimSpace(line))
		case in:
			return recipe
		}
	}
	if !in {
		t.Fatalf("the Makefile has no target %s", name)
	}
	return recipe
}

// checkProxy: with RDS Proxy the functions' pools go through it
// (DB_PROXY_HOST), the poll server's listener never does; the proxy signs
// in with the database secret and may read nothing else.
func checkProxy(t *testing.T, p parsed) {
	host := ""
	if p.global.Environment != nil {
		host = p.global.Environment.Variables["DB_PROXY_HOST"]
	}
	if host != getAttOf("DatabaseProxy.Endpoint") || !slices.Contains(p.refs.elses["UseProxy"], any("")) {
		t.Errorf("Globals DB_PROXY_HOST = %q, want !If [UseProxy, !GetAtt DatabaseProxy.Endpoint, \"\"]", host)
	}
	if c, ok := p.container(t); ok {
		if _, set := c.env["DB_PROXY_HOST"]; set {
			t.Error("the poll server sets DB_PROXY_HOST: its listener must reach the database directly")
		}
	}
	px := p.raw(t, "DatabaseProxy")
	if px["Condition"] != "UseProxy" || dig(px, "Properties", "EngineFamily") != "POSTGRESQL" || dig(px, "Properties", "RequireTLS") != true ||
		dig(px, "Properties", "Auth", 0, "SecretArn") != refTo(secretParam) || dig(px, "Properties", "RoleArn") != getAttOf("DatabaseProxyRole.Arn") ||
		fmt.Sprint(dig(px, "Properties", "VpcSubnetIds")) != fmt.Sprint(privateSubnets) {
		t.Errorf("DatabaseProxy = %v; want a PostgreSQL proxy under UseProxy, TLS required, signing in with %s through DatabaseProxyRole, in the private subnets", px, secretParam)
	}
	role := p.raw(t, "DatabaseProxyRole")
	if g := grants(role); trusted(role) != "rds.amazonaws.com" || !slices.Equal(g, []string{"secretsmanager:GetSecretValue " + refTo(secretParam)}) {
		t.Errorf("DatabaseProxyRole trusts %s and grants %q; want rds.amazonaws.com reading %s only", trusted(role), g, secretParam)
	}
	tg := p.raw(t, "DatabaseProxyTargetGroup")
	if dig(tg, "Properties", "DBProxyName") != refTo("DatabaseProxy") ||
		fmt.Sprint(dig(tg, "Properties", "DBInstanceIdentifiers")) != fmt.Sprint([]any{refTo("ProxyDBInstanceId")}) ||
		fmt.Sprint(dig(tg, "Properties", "DBClusterIdentifiers")) != fmt.Sprint([]any{refTo("ProxyDBClusterId")}) {
		t.Errorf("DatabaseProxyTargetGroup = %v; want DatabaseProxy in front of ProxyDBInstanceId or ProxyDBClusterId", dig(tg, "Properties"))
	}
	in := p.raw(t, "ProxyFromFunctions")
	if dig(in, "Properties", "GroupId") != refTo("DatabaseProxySecurityGroup") || dig(in, "Properties", "SourceSecurityGroupId") != refTo("FunctionSecurityGroup") {
		t.Errorf("ProxyFromFunctions = %v; the proxy should admit the functions' security group", dig(in, "Properties"))
	}
}
