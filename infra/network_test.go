package infra

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/letagents/letagents-go/shared/config"
)

// The checks of what the stack makes around the functions when the user
// brings nothing: the VPC (private subnets with a NAT gateway's route out,
// public ones for the load balancer) and the Aurora database, and the cap
// on the poll function without a poll server.

// privateSubnets and publicSubnets are the stack's own subnets, as a
// Fn::If on CreateVpc reads here (its true branch); the else branch is
// the parameter naming yours.
var (
	privateSubnets = []string{refTo("PrivateSubnetA"), refTo("PrivateSubnetB")}
	publicSubnets  = []string{refTo("PublicSubnetA"), refTo("PublicSubnetB")}
)

func TestTemplateNetwork(t *testing.T) {
	t.Parallel()
	p := parseTemplate(t)
	conditionOf := func(name string) any { return p.raw(t, name)["Condition"] }

	// Two private and two public subnets, one of each per zone.
	zones := map[string]string{}
	for _, name := range []string{"PrivateSubnetA", "PrivateSubnetB", "PublicSubnetA", "PublicSubnetB"} {
		r := p.raw(t, name)
		if r == nil || r["Type"] != "AWS::EC2::Subnet" || conditionOf(name) != "CreateVpc" || dig(r, "Properties", "VpcId") != refTo("Vpc") {
			t.Errorf("%s = %v; want a subnet of Vpc under CreateVpc", name, r)
			continue
		}
		zones[name] = fmt.Sprint(dig(r, "Properties", "AvailabilityZone"))
	}
	if zones["PrivateSubnetA"] == zones["PrivateSubnetB"] || zones["PublicSubnetA"] == zones["PublicSubnetB"] ||
		zones["PrivateSubnetA"] != zones["PublicSubnetA"] || zones["PrivateSubnetB"] != zones["PublicSubnetB"] {
		t.Errorf("subnet zones %v: want A and B in two zones, a private and a public subnet in each", zones)
	}
	// Each subnet's route table: the private ones out through the NAT
	// gateway (GitHub, AWS APIs), the public ones through the internet
	// gateway; S3 through its gateway endpoint.
	tableOf := map[string]string{}
	routes := map[string]string{} // route table → target of 0.0.0.0/0
	var s3Tables []any
	for name := range p.tmpl.Resources {
		r := p.raw(t, name)
		switch r["Type"] {
		case "AWS::EC2::SubnetRouteTableAssociation":
			tableOf[fmt.Sprint(dig(r, "Properties", "SubnetId"))] = fmt.Sprint(dig(r, "Properties", "RouteTableId"))
		case "AWS::EC2::Route":
			if dig(r, "Properties", "DestinationCidrBlock") == "0.0.0.0/0" {
				target := dig(r, "Properties", "NatGatewayId")
				if target == nil {
					target = dig(r, "Properties", "GatewayId")
				}
				routes[fmt.Sprint(dig(r, "Properties", "RouteTableId"))] = fmt.Sprint(target)
			}
		case "AWS::EC2::VPCEndpoint":
			if strings.HasSuffix(fmt.Sprint(dig(r, "Properties", "ServiceName")), ".s3") && dig(r, "Properties", "VpcEndpointType") == "Gateway" {
				s3Tables, _ = dig(r, "Properties", "RouteTableIds").([]any)
			}
		}
	}
	for _, sn := range privateSubnets {
		table := tableOf[sn]
		if routes[table] != refTo("NatGateway") || !slices.Contains(s3Tables, any(table)) {
			t.Errorf("%s: route table %q routes 0.0.0.0/0 to %q (S3 endpoint on %v); want NatGateway, and the S3 gateway endpoint", sn, table, routes[table], s3Tables)
		}
	}
	for _, sn := range publicSubnets {
		if table := tableOf[sn]; routes[table] != refTo("InternetGateway") {
			t.Errorf("%s: route table %q routes 0.0.0.0/0 to %q, want InternetGateway", sn, table, routes[table])
		}
	}
	if nat := p.raw(t, "NatGateway"); !slices.Contains(publicSubnets, fmt.Sprint(dig(nat, "Properties", "SubnetId"))) {
		t.Errorf("NatGateway in %v, want a public subnet", dig(nat, "Properties", "SubnetId"))
	}
	// What runs where: the functions, the poll tasks, the database and the
	// proxy in the private subnets (the functions' are checked with the
	// Globals), the load balancer in the public ones.
	where := map[string][]any{
		"PollService":         {"Properties", "NetworkConfiguration", "AwsvpcConfiguration", "Subnets"},
		"DatabaseSubnetGroup": {"Properties", "SubnetIds"},
		"PollLoadBalancer":    {"Properties", "Subnets"},
	}
	for name, path := range where {
		want := privateSubnets
		if name == "PollLoadBalancer" {
			want = publicSubnets
		}
		if got := fmt.Sprint(dig(p.raw(t, name), path...)); got != fmt.Sprint(want) {
			t.Errorf("%s subnets %s, want %v", name, got, want)
		}
	}
	if ip := dig(p.raw(t, pollService), "Properties", "NetworkConfiguration", "AwsvpcConfiguration", "AssignPublicIp"); ip != "DISABLED" {
		t.Errorf("%s: AssignPublicIp %v, want DISABLED (the tasks go out through the NAT gateway)", pollService, ip)
	}
	for _, wantElse := range []string{refTo("SubnetIds"), refTo("PublicSubnetIds"), refTo("VpcId")} {
		if !slices.ContainsFunc(p.refs.elses["CreateVpc"], func(v any) bool { return fmt.Sprint(v) == wantElse || fmt.Sprint(v) == "["+wantElse+"]" }) {
			t.Errorf("no Fn::If on CreateVpc falls back to %s: your VPC could not be used", wantElse)
		}
	}
	// The migrations wait for the route out (Secrets Manager, and the
	// reply to CloudFormation).
	if got := dig(p.raw(t, migrateResource), "Properties", "AfterNetwork"); got != refTo("PrivateDefaultRoute") {
		t.Errorf("%s AfterNetwork = %v, want !Ref PrivateDefaultRoute (the Fn::If that makes it wait for the NAT route)", migrateResource, got)
	}
}

func TestTemplateDatabase(t *testing.T) {
	t.Parallel()
	p := parseTemplate(t)
	if param := p.tmpl.Parameters[secretParam]; param.Default != "" {
		t.Errorf("parameter %s defaults to %v, want \"\": a first deploy creates the database", secretParam, param.Default)
	}
	cluster := p.raw(t, "DatabaseCluster")
	props := func(path ...any) any { return dig(cluster, append([]any{"Properties"}, path...)...) }
	if cluster["Condition"] != "MakeDatabase" || cluster["DeletionPolicy"] != "Snapshot" || cluster["UpdateReplacePolicy"] != "Snapshot" ||
		props("Engine") != "aurora-postgresql" || props("ManageMasterUserPassword") != true || props("StorageEncrypted") != true ||
		props("ServerlessV2ScalingConfiguration", "MinCapacity") == nil || props("ServerlessV2ScalingConfiguration", "MaxCapacity") == nil ||
		fmt.Sprint(props("VpcSecurityGroupIds")) != fmt.Sprint([]any{refTo("DatabaseSecurityGroup")}) {
		t.Errorf("DatabaseCluster = %v; want aurora-postgresql Serverless v2 under MakeDatabase, RDS keeping its password, encrypted, "+
			"a snapshot on delete and replace, in DatabaseSecurityGroup", cluster)
	}
	inst := p.raw(t, "DatabaseInstance")
	if inst["Condition"] != "MakeDatabase" || dig(inst, "Properties", "DBInstanceClass") != "db.serverless" ||
		dig(inst, "Properties", "DBClusterIdentifier") != refTo("DatabaseCluster") || dig(inst, "Properties", "Engine") != props("Engine") ||
		dig(inst, "Properties", "PubliclyAccessible") != false {
		t.Errorf("DatabaseInstance = %v; want the cluster's private db.serverless writer", inst)
	}
	if got := dig(p.raw(t, migrateResource), "Properties", "AfterDatabase"); got != refTo("DatabaseInstance") {
		t.Errorf("%s AfterDatabase = %v, want !Ref DatabaseInstance: the migrations need the writer", migrateResource, got)
	}

	// Every use of the cluster's secret is the whole expression, so that
	// your secret takes its place when you bring a database.
	if n, all := strings.Count(p.src, "DatabaseCluster.MasterUserSecret.SecretArn"), strings.Count(p.src, dbSecretExpr); n != all+1 {
		t.Errorf("template.yaml names the cluster's secret %d times, %d of them as %q; want every one but the output so", n, all, dbSecretExpr)
	}

	// The functions and the poll tasks find the created database with the
	// address beside its secret, which holds only the credentials.
	env := p.global.Environment.Variables
	c, ok := p.container(t)
	if !ok {
		t.Fatal("no poll container")
	}
	for _, vars := range []map[string]string{env, c.env} {
		if vars["DB_HOST"] != getAttOf("DatabaseCluster.Endpoint.Address") || vars["DB_PORT"] != getAttOf("DatabaseCluster.Endpoint.Port") ||
			vars["DB_NAME"] != props("DatabaseName") || vars["DB_SECRET_ARN"] != createdSecret {
			t.Errorf("database variables %q %q %q %q; want the cluster's address, DatabaseName %v and its secret",
				vars["DB_SECRET_ARN"], vars["DB_HOST"], vars["DB_PORT"], vars["DB_NAME"], props("DatabaseName"))
		}
	}
	deployed := map[string]string{}
	for k, v := range env {
		deployed[k] = v
	}
	deployed["DB_HOST"], deployed["DB_PORT"] = "letagents.cluster-c1.eu-west-1.rds.amazonaws.com", "5432"
	cfg, err := config.Load(getenv(p.resolved(deployed)))
	if err != nil {
		t.Fatal(err)
	}
	managed, _ := json.Marshal(map[string]string{"username": fmt.Sprint(props("MasterUsername")), "password": "generated"})
	got, err := cfg.DB.ConnString(t.Context(), secretOnly(managed))
	if want := fmt.Sprintf("postgres://%s:generated@letagents.cluster-c1.eu-west-1.rds.amazonaws.com:5432/%s?sslmode=require",
		props("MasterUsername"), props("DatabaseName")); err != nil || got != want {
		t.Errorf("the functions' database with RDS's secret: %q, %v; want %q", got, err, want)
	}

	// It admits the functions and the poll tasks, on its port: the rules
	// that open your database's group (the Fn::If's true branch here) open
	// the created one's otherwise.
	if !slices.Contains(p.refs.elses["HasDatabaseSecurityGroup"], any(refTo("DatabaseSecurityGroup"))) {
		t.Error("no Fn::If on HasDatabaseSecurityGroup falls back to the created DatabaseSecurityGroup")
	}
	admits := map[string]bool{}
	for name := range p.tmpl.Resources {
		r := p.raw(t, name)
		if r["Type"] == "AWS::EC2::SecurityGroupIngress" && dig(r, "Properties", "GroupId") == refTo("DatabaseSecurityGroupId") &&
			num(dig(r, "Properties", "FromPort")) == num(props("Port")) {
			admits[fmt.Sprint(dig(r, "Properties", "SourceSecurityGroupId"))] = true
		}
	}
	for _, sg := range []string{"FunctionSecurityGroup", pollTaskSG} {
		if !admits[refTo(sg)] {
			t.Errorf("the database's security group does not admit %s on its port (admits %v)", sg, admits)
		}
	}
}

// TestTemplatePollConcurrency: without a poll server, parked long-polls
// hold instances of the poll function; its reserved concurrency caps them.
func TestTemplatePollConcurrency(t *testing.T) {
	t.Parallel()
	p := parseTemplate(t)
	fn := p.raw(t, "PollFunction")
	param := p.tmpl.Parameters["PollFunctionConcurrency"]
	if got := num(dig(fn, "Properties", "ReservedConcurrentExecutions")); got < 1 || got != num(param.Default) ||
		!strings.Contains(p.src, "\n  CapPollFunction: !And [!Condition WithoutContainer,") ||
		!strings.Contains(p.src, "ReservedConcurrentExecutions: !If [CapPollFunction, !Ref PollFunctionConcurrency, !Ref AWS::NoValue]") {
		t.Errorf("PollFunction ReservedConcurrentExecutions = %v (parameter default %v); want !If [CapPollFunction, "+
			"PollFunctionConcurrency, none], CapPollFunction holding without a poll server", got, param.Default)
	}
}

// secretOnly is a Secrets Manager that holds one secret, whatever is asked.
type secretOnly []byte

func (s secretOnly) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	v := string(s)
	return &secretsmanager.GetSecretValueOutput{ARN: in.SecretId, SecretString: &v}, nil
}
