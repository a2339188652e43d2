package valkey

import (
	"testing"
	"time"
)

func TestParseClientList(t *testing.T) {
	// Valkey 8.0.1's CLIENT LIST of a primary: the operator, a replica, an application.
	raw := "id=3 addr=10.88.1.4:51122 laddr=10.88.1.7:6379 fd=9 name= age=12 idle=0 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 watch=0 qbuf=26 qbuf-free=20448 argv-mem=10 multi-mem=0 rbs=1024 rbp=0 obl=0 oll=0 omem=0 tot-mem=22426 events=r cmd=client|list user=_operator redir=-1 resp=2 lib-name= lib-ver=\n" +
		"id=5 addr=10.88.2.9:6379 laddr=10.88.1.7:6379 fd=11 name= age=300 idle=1 flags=S db=0 sub=0 psub=0 ssub=0 multi=-1 watch=0 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=1024 rbp=0 obl=0 oll=0 omem=0 tot-mem=1920 events=r cmd=replconf user=_replication redir=-1 resp=2 lib-name= lib-ver=\n" +
		"id=9 addr=10.88.0.1:40000 laddr=10.88.1.7:6379 fd=12 name= age=40 idle=7 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 watch=0 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=1024 rbp=0 obl=0 oll=0 omem=0 tot-mem=1920 events=r cmd=set user=app redir=-1 resp=3 lib-name=valkey-go lib-ver=1.0\n"
	got := ParseClientList(raw)
	want := []ClientConn{
		{ID: "3", Addr: "10.88.1.4:51122", User: "_operator", Flags: "N", Cmd: "client|list"},
		{ID: "5", Addr: "10.88.2.9:6379", User: "_replication", Flags: "S", Idle: time.Second, Cmd: "replconf"},
		{ID: "9", Addr: "10.88.0.1:40000", User: "app", Flags: "N", Idle: 7 * time.Second, Cmd: "set"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d connections, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("connection %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
