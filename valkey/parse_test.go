package valkey_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkey/valkeytest"
)

const (
	idA = "c8635e446b253a85426d2d8b4d665efa4fef1d44"
	idB = "479c675ad8404edae8e808661a2c23bd33ef9e74"
)

func TestParseClusterNodes(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []valkey.ClusterNode
	}{
		{
			name: "myself primary with slots",
			in:   idA + " 127.0.0.1:17001@27001 myself,master - 0 0 3 connected 0-100 200-300 301\n",
			want: []valkey.ClusterNode{{
				ID: idA, IP: "127.0.0.1", Port: 17001, BusPort: 27001, Flags: []string{"myself", "master"},
				Myself: true, Primary: true, ConfigEpoch: 3, Connected: true,
				Slots: []valkey.SlotRange{{Start: 0, End: 100}, {Start: 200, End: 301}},
			}},
		},
		{
			name: "replica, CRLF, blank lines",
			in:   "\r\n" + idB + " 127.0.0.1:17002@27002 slave " + idA + " 1795951340811 1795951340900 1 connected\r\n\n",
			want: []valkey.ClusterNode{{
				ID: idB, IP: "127.0.0.1", Port: 17002, BusPort: 27002, Flags: []string{"slave"}, Replica: true,
				PrimaryID: idA, PingSent: 1795951340811, PongRecv: 1795951340900, ConfigEpoch: 1, Connected: true,
			}},
		},
		{
			name: "primary/replica spellings, hostname, aux fields, failing, disconnected",
			in:   idB + " 10.0.0.7:6379@16379,valkey-0.svc,shard-id=abc replica,fail?,nofailover " + idA + " 5 6 7 disconnected",
			want: []valkey.ClusterNode{{
				ID: idB, IP: "10.0.0.7", Port: 6379, BusPort: 16379, Hostname: "valkey-0.svc",
				Flags: []string{"replica", "fail?", "nofailover"}, Replica: true, PFail: true, NoFailover: true,
				PrimaryID: idA, PingSent: 5, PongRecv: 6, ConfigEpoch: 7,
			}},
		},
		{
			name: "aux fields without hostname",
			in:   idB + " 10.0.0.7:6379@16379,,tls-port=0 primary,fail - 0 0 0 connected",
			want: []valkey.ClusterNode{{
				ID: idB, IP: "10.0.0.7", Port: 6379, BusPort: 16379, Flags: []string{"primary", "fail"},
				Primary: true, Fail: true, Connected: true,
			}},
		},
		{
			name: "IPv6, handshake, noaddr",
			in: idA + " ::1:7000@17000 handshake - 0 0 0 connected\n" +
				idB + " :0@0 master,noaddr - 0 0 0 disconnected\n",
			want: []valkey.ClusterNode{
				{ID: idA, IP: "::1", Port: 7000, BusPort: 17000, Flags: []string{"handshake"}, Handshake: true, Connected: true},
				{ID: idB, Flags: []string{"master", "noaddr"}, Primary: true, NoAddr: true},
			},
		},
		{
			name: "migrating and importing",
			in:   idA + " 127.0.0.1:1@2 myself,master - 0 0 0 connected 10923-16383 [15123->-" + idB + "] [5-<-" + idB + "]",
			want: []valkey.ClusterNode{{
				ID: idA, IP: "127.0.0.1", Port: 1, BusPort: 2, Flags: []string{"myself", "master"}, Myself: true,
				Primary: true, Connected: true, Slots: []valkey.SlotRange{{Start: 10923, End: 16383}},
				Migrating: map[int]string{15123: idB}, Importing: map[int]string{5: idB},
			}},
		},
		{
			name: "noflags, old address without bus port",
			in:   idA + " 127.0.0.1:6379 noflags - 0 0 0 connected 16383",
			want: []valkey.ClusterNode{{ID: idA, IP: "127.0.0.1", Port: 6379, Connected: true,
				Slots: []valkey.SlotRange{{Start: 16383, End: 16383}}}},
		},
		{name: "empty", in: "\n", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := valkey.ParseClusterNodes(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseClusterNodesErrors(t *testing.T) {
	for _, in := range []string{
		idA + " 127.0.0.1:1@2 master - 0 0 0",                       // 7 fields
		idA + " 127.0.0.1@2 master - 0 0 0 connected",               // no port
		idA + " 127.0.0.1:70000@2 master - 0 0 0 connected",         // port range
		idA + " 127.0.0.1:1@x master - 0 0 0 connected",             // bus port
		idA + " 127.0.0.1:1@2 master - x 0 0 connected",             // ping
		idA + " 127.0.0.1:1@2 master - 0 x 0 connected",             // pong
		idA + " 127.0.0.1:1@2 master - 0 0 -1 connected",            // epoch
		idA + " 127.0.0.1:1@2 master - 0 0 0 connected 16384",       // slot range
		idA + " 127.0.0.1:1@2 master - 0 0 0 connected 9-3",         // reversed
		idA + " 127.0.0.1:1@2 master - 0 0 0 connected -3",          // negative
		idA + " 127.0.0.1:1@2 master - 0 0 0 connected [5->-]",      // no id
		idA + " 127.0.0.1:1@2 master - 0 0 0 connected [5]",         // no arrow
		idA + " 127.0.0.1:1@2 master - 0 0 0 connected [99999->-x]", // slot
		idA + " 127.0.0.1:1@2 master - 0 0 0 connected [5->-x",      // unclosed
	} {
		if _, err := valkey.ParseClusterNodes(in); !errors.Is(err, valkey.ErrParse) {
			t.Errorf("%q: err %v, want ErrParse", in, err)
		}
	}
}

func TestParseInfoAndReplication(t *testing.T) {
	primary := "# Server\r\nvalkey_version:8.0.1\r\nredis_version:7.2.4\r\n\r\n# Replication\r\nrole:master\r\n" +
		"connected_slaves:2\r\nslave0:ip=10.0.0.2,port=6379,state=online,offset=120,lag=1,type=replica\r\n" +
		"slave1:ip=::1,port=6380,state=wait_bgsave,offset=0,lag=0\r\nmaster_failover_state:no-failover\r\n" +
		"master_repl_offset:120\r\nnot a field\r\n"
	info := valkey.ParseInfo(primary)
	if info.Get("redis_version") != "7.2.4" || info.Section("Replication")["role"] != "master" || info.Get("nope") != "" {
		t.Fatalf("ParseInfo: %+v", info)
	}
	want := valkey.Replication{Role: valkey.RolePrimary, Offset: 120, ConnectedReplicas: 2, FailoverState: "no-failover",
		Replicas: []valkey.ReplicaInfo{
			{IP: "10.0.0.2", Port: 6379, State: "online", Offset: 120, Lag: 1},
			{IP: "::1", Port: 6380, State: "wait_bgsave"},
		}}
	if got := valkey.ParseReplication(info); !reflect.DeepEqual(got, want) {
		t.Errorf("primary:\ngot  %+v\nwant %+v", got, want)
	}

	tests := []struct {
		name, in string
		want     valkey.Replication
	}{
		{
			name: "replica, master_ spelling, link down",
			in: "role:slave\nmaster_host:10.0.0.1\nmaster_port:6379\nmaster_link_status:down\n" +
				"master_link_down_since_seconds:12\nmaster_sync_in_progress:1\nslave_repl_offset:99\nmaster_repl_offset:100\n",
			want: valkey.Replication{Role: valkey.RoleReplica, PrimaryHost: "10.0.0.1", PrimaryPort: 6379,
				LinkDownSince: 12, SyncInProgress: true, Offset: 99},
		},
		{
			name: "replica, primary_ spelling",
			in: "role:replica\nprimary_host:10.0.0.1\nprimary_port:6379\nprimary_link_status:up\n" +
				"primary_sync_in_progress:0\nreplica_repl_offset:42\nconnected_replicas:0\n",
			want: valkey.Replication{Role: valkey.RoleReplica, PrimaryHost: "10.0.0.1", PrimaryPort: 6379,
				LinkUp: true, Offset: 42},
		},
		{
			name: "primary spelling with replicaN lines",
			in:   "role:primary\nconnected_replicas:1\nreplica0:ip=a,port=1,state=online,offset=5,lag=0\nprimary_repl_offset:5\n",
			want: valkey.Replication{Role: valkey.RolePrimary, Offset: 5, ConnectedReplicas: 1,
				Replicas: []valkey.ReplicaInfo{{IP: "a", Port: 1, State: "online", Offset: 5}}},
		},
		{name: "garbage", in: "\x00:\n:::\nrole", want: valkey.Replication{}},
	}
	for _, tt := range tests {
		if got := valkey.ParseReplication(valkey.ParseInfo(tt.in)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in   string
		want valkey.Version
		ok   bool
	}{
		{"8.0.1", valkey.Version{Major: 8, Patch: 1}, true},
		{"9.0.0-rc1", valkey.Version{Major: 9}, true},
		{" 8.1 ", valkey.Version{Major: 8, Minor: 1}, true},
		{"255.255.255", valkey.Version{Major: 255, Minor: 255, Patch: 255}, true},
		{"8", valkey.Version{}, false},
		{"8.x.1", valkey.Version{}, false},
		{"8..1", valkey.Version{}, false},
		{"8.0.1.2", valkey.Version{}, false},
		{"+8.0", valkey.Version{}, false},
		{"99999999999999999999.0", valkey.Version{}, false},
		{"", valkey.Version{}, false},
	}
	for _, tt := range tests {
		got, err := valkey.ParseVersion(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	v := valkey.Version{Major: 8, Minor: 1, Patch: 2}
	checks := []struct {
		major, minor int
		want         bool
	}{{8, 0, true}, {8, 1, true}, {8, 2, false}, {7, 9, true}, {9, 0, false}}
	for _, c := range checks {
		if v.AtLeast(c.major, c.minor) != c.want {
			t.Errorf("%v.AtLeast(%d, %d) != %v", v, c.major, c.minor, c.want)
		}
	}
	if v.String() != "8.1.2" {
		t.Errorf("String() = %q", v.String())
	}
	fromInfo, err := valkey.VersionFromInfo(valkey.ParseInfo("redis_version:7.2.4\n"))
	if err != nil || fromInfo != (valkey.Version{Major: 7, Minor: 2, Patch: 4}) {
		t.Errorf("redis_version fallback: %v %v", fromInfo, err)
	}
}

func TestParseClusterInfo(t *testing.T) {
	got := valkey.ParseClusterInfo("cluster_state:ok\r\ncluster_slots_assigned:16384\r\n:x\r\njunk\r\n")
	want := map[string]string{"cluster_state": "ok", "cluster_slots_assigned": "16384"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v", got)
	}
}

func TestParseClusterShards(t *testing.T) {
	node := func(id, role string) []any {
		return []any{"id", id, "port", int64(6379), "ip", "10.0.0.1", "endpoint", "10.0.0.1",
			"hostname", "", "role", role, "replication-offset", int64(7), "health", "online", "tls-port", "6380"}
	}
	flat := []any{[]any{"slots", []any{int64(0), int64(5), "6", "9"}, "nodes", []any{node(idA, "master"), node(idB, "replica")}}}
	asMap := []any{map[string]any{"slots": []any{int64(0), int64(9)}, "nodes": []any{
		map[string]any{"id": idA, "port": int64(6379), "ip": "10.0.0.1", "endpoint": "10.0.0.1", "hostname": "",
			"role": "master", "replication-offset": int64(7), "health": "online", "tls-port": int64(6380)},
		map[string]any{"id": idB, "port": int64(6379), "ip": "10.0.0.1", "endpoint": "10.0.0.1", "hostname": "",
			"role": "replica", "replication-offset": int64(7), "health": "online", "tls-port": int64(6380)},
	}}}
	want := []valkey.ClusterShard{{Slots: []valkey.SlotRange{{Start: 0, End: 9}}, Nodes: []valkey.ShardNode{
		{ID: idA, IP: "10.0.0.1", Endpoint: "10.0.0.1", Port: 6379, TLSPort: 6380, Role: valkey.RolePrimary, ReplicationOffset: 7, Health: "online"},
		{ID: idB, IP: "10.0.0.1", Endpoint: "10.0.0.1", Port: 6379, TLSPort: 6380, Role: valkey.RoleReplica, ReplicationOffset: 7, Health: "online"},
	}}}
	for name, in := range map[string]any{"RESP2 flat": flat, "RESP3 map": asMap} {
		got, err := valkey.ParseClusterShards(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v\ngot  %+v\nwant %+v", name, err, got, want)
		}
		if p, ok := got[0].Primary(); !ok || p.ID != idA {
			t.Errorf("%s: Primary() = %+v", name, p)
		}
	}
	bad := []any{
		nil, "x", []any{"x"}, []any{[]any{"slots"}}, []any{[]any{"slots", []any{int64(0)}}},
		[]any{[]any{"slots", []any{int64(5), int64(1)}}}, []any{[]any{"slots", []any{int64(0), int64(16384)}}},
		[]any{[]any{"nodes", "x"}}, []any{[]any{"nodes", []any{[]any{"port", int64(1)}}}},
		[]any{[]any{"nodes", []any{[]any{"id", idA, "port", int64(-1)}}}},
		[]any{[]any{"nodes", []any{[]any{"id", []any{}}}}}, []any{[]any{int64(1), "x"}},
		[]any{[]any{"nodes", []any{[]any{"id", idA, "replication-offset", errors.New("x")}}}},
	}
	for _, in := range bad {
		if _, err := valkey.ParseClusterShards(in); !errors.Is(err, valkey.ErrParse) {
			t.Errorf("%#v: err %v, want ErrParse", in, err)
		}
	}
}

func TestParseACLUser(t *testing.T) {
	hash := valkey.ACLPasswordHash("pw")
	flat := []any{"flags", []any{"on", "sanitize-payload"}, "passwords", []any{hash}, "commands", "-@all +get",
		"keys", "~app:* %R~ro:*", "channels", "&app:*", "selectors", []any{
			[]any{"commands", "+set", "keys", "~w:*", "channels", ""},
		}}
	want := valkey.ACLUser{Flags: []string{"on", "sanitize-payload"}, Enabled: true, Passwords: []string{hash},
		Commands: "-@all +get", Keys: []string{"~app:*", "%R~ro:*"}, Channels: []string{"&app:*"},
		Selectors: []valkey.ACLSelector{{Commands: "+set", Keys: []string{"~w:*"}, Channels: []string{}}}}
	got, err := valkey.ParseACLUser(flat)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%v\ngot  %+v\nwant %+v", err, got, want)
	}
	asMap := map[string]any{"flags": []any{"off", "nopass"}, "passwords": []any{}, "commands": "+@all",
		"keys": []any{"~*"}, "channels": "", "selectors": []any{}}
	got, err = valkey.ParseACLUser(asMap)
	if err != nil || got.Enabled || !got.NoPass || !reflect.DeepEqual(got.Keys, []string{"~*"}) {
		t.Fatalf("RESP3 map: %v %+v", err, got)
	}
	for _, in := range []any{"x", []any{"flags"}, []any{"flags", int64(1)}, []any{"commands", []any{}}, []any{"selectors", "x"}} {
		if _, err := valkey.ParseACLUser(in); !errors.Is(err, valkey.ErrParse) {
			t.Errorf("%#v: err %v, want ErrParse", in, err)
		}
	}
}

func TestParseSlotMigrations(t *testing.T) {
	for _, raw := range realSeeds(t, "getslotmigrations") {
		tree, _, err := valkeytest.DecodeRESP(raw)
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := valkey.ParseSlotMigrations(tree)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("captured GETSLOTMIGRATIONS: %v %+v", err, jobs)
		}
		j := jobs[0]
		if j.Operation != "EXPORT" || !j.Done() || j.State != valkey.SlotMigrationSuccess || len(j.Name) != 40 ||
			len(j.SourceNode) != 40 || len(j.TargetNode) != 40 || len(j.Slots) != 1 {
			t.Errorf("captured job parsed as %+v", j)
		}
	}
	// Development builds named the fields link_name and node.
	old := []any{map[string]any{"link_name": idA, "operation": "IMPORT", "slot_ranges": "0-9 20-29",
		"node": idB, "state": "replicating", "create_time": int64(1)}}
	jobs, err := valkey.ParseSlotMigrations(old)
	want := valkey.SlotMigration{Name: idA, Operation: "IMPORT", Node: idB, State: "replicating",
		Slots:  []valkey.SlotRange{{Start: 0, End: 9}, {Start: 20, End: 29}},
		Fields: map[string]string{"link_name": idA, "operation": "IMPORT", "slot_ranges": "0-9 20-29", "node": idB, "state": "replicating", "create_time": "1"}}
	if err != nil || len(jobs) != 1 || !reflect.DeepEqual(jobs[0], want) || jobs[0].Done() {
		t.Errorf("got %v %+v", err, jobs)
	}
	for _, in := range []any{"x", []any{"x"}, []any{[]any{"slot_ranges", "9-0"}}, []any{[]any{"state", []any{}}}} {
		if _, err := valkey.ParseSlotMigrations(in); !errors.Is(err, valkey.ErrParse) {
			t.Errorf("%#v: err %v, want ErrParse", in, err)
		}
	}
}

// TestParseRealOutput parses every captured reply of every server version.
func TestParseRealOutput(t *testing.T) {
	for _, s := range realSeeds(t, "cluster-nodes") {
		nodes, err := valkey.ParseClusterNodes(string(s))
		if err != nil || len(nodes) < 6 {
			t.Errorf("captured CLUSTER NODES: %v (%d nodes)", err, len(nodes))
		}
	}
	for _, s := range realSeeds(t, "cluster-shards") {
		tree, _, err := valkeytest.DecodeRESP(s)
		if err != nil {
			t.Fatal(err)
		}
		shards, err := valkey.ParseClusterShards(tree)
		if err != nil || len(shards) < 3 {
			t.Errorf("captured CLUSTER SHARDS: %v (%d shards)", err, len(shards))
		}
	}
	for _, s := range realSeeds(t, "acl-getuser") {
		tree, _, err := valkeytest.DecodeRESP(s)
		if err != nil {
			t.Fatal(err)
		}
		if u, err := valkey.ParseACLUser(tree); err != nil || !u.Enabled || len(u.Passwords) != 1 {
			t.Errorf("captured ACL GETUSER: %v %+v", err, u)
		}
	}
	for _, s := range realSeeds(t, "info-") {
		if _, err := valkey.VersionFromInfo(valkey.ParseInfo(string(s))); err != nil {
			t.Errorf("captured INFO: %v", err)
		}
	}
}

func TestKeyCount(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int64
		ok   bool
	}{
		{"no keyspace section", "# Server\r\nvalkey_version:8.0.1\r\n", 0, true},
		{"empty keyspace", "# Keyspace\r\n", 0, true},
		{"one database", "# Keyspace\r\ndb0:keys=12,expires=3,avg_ttl=100\r\n", 12, true},
		{"several databases", "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\ndb3:keys=41,expires=0,avg_ttl=0\r\n", 42, true},
		{"a line without keys", "# Keyspace\r\ndb0:expires=0\r\n", 0, false},
		{"a bad count", "# Keyspace\r\ndb0:keys=many,expires=0\r\ndb1:keys=2\r\n", 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ok := valkey.KeyCount(valkey.ParseInfo(tt.in))
			if n != tt.want || ok != tt.ok {
				t.Errorf("KeyCount = %d, %v; want %d, %v", n, ok, tt.want, tt.ok)
			}
		})
	}
}
