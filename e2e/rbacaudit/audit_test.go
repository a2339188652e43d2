package rbacaudit

import (
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
)

const sampleLog = `{"kind":"Event","stage":"ResponseComplete","verb":"get","user":{"username":"system:serviceaccount:op:op-cluster-controller"},"objectRef":{"resource":"secrets","namespace":"a","name":"c-system-users","apiVersion":"v1"},"responseStatus":{"code":404}}
{"kind":"Event","stage":"ResponseComplete","verb":"patch","user":{"username":"system:serviceaccount:op:op-cluster-controller"},"objectRef":{"resource":"valkeyclusters","subresource":"status","namespace":"a","name":"c","apiGroup":"valkey.io"},"responseStatus":{"code":200}}
{"kind":"Event","stage":"ResponseComplete","verb":"delete","user":{"username":"system:serviceaccount:op:op-cluster-controller"},"objectRef":{"resource":"pods","namespace":"a","name":"p"},"responseStatus":{"code":403},"annotations":{"authorization.k8s.io/decision":"forbid"}}
{"kind":"Event","stage":"ResponseComplete","verb":"list","user":{"username":"system:serviceaccount:op:op-cluster-controller"},"objectRef":{"resource":"secrets","namespace":"gone"},"responseStatus":{"code":403},"annotations":{"authorization.k8s.io/decision":"allow"}}
{"kind":"Event","stage":"ResponseComplete","verb":"get","user":{"username":"system:serviceaccount:other:x"},"objectRef":{"resource":"pods","namespace":"a"},"responseStatus":{"code":200}}
{"kind":"Event","stage":"ResponseComplete","verb":"get","user":{"username":"system:serviceaccount:op:op-webhooks"},"requestURI":"/version","responseStatus":{"code":200}}
{"kind":"Event","stage":"ResponseComplete","verb":"update","user":{"username":"system:serviceaccount:op:op-webhooks"},"objectRef":{"resource":"leases","namespace":"op","name":"webhooks-leader","apiGroup":"coordination.k8s.io"},"responseStatus":{"code":200}}
`

func TestUnusedAndForbidden(t *testing.T) {
	reqs, err := ReadRequests(strings.NewReader(sampleLog), "op")
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 5 {
		t.Fatalf("%d requests of namespace op with an object, want 5: %+v", len(reqs), reqs)
	}
	cc, wh := "op/op-cluster-controller", "op/op-webhooks"
	grants := []Grant{
		{ServiceAccount: cc, Rule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}}},
		{ServiceAccount: cc, Rule: rbacv1.PolicyRule{APIGroups: []string{"valkey.io"}, Resources: []string{"valkeyclusters/status"}, Verbs: []string{"patch"}}},
		{ServiceAccount: wh, Namespace: "op", Rule: rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"update"}, ResourceNames: []string{"webhooks-leader"}}},
		{ServiceAccount: wh, Namespace: "other", Rule: rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"update"}}},
		{ServiceAccount: wh, Rule: rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	var got []string
	for _, p := range Unused(Permissions(grants), reqs) {
		got = append(got, p.ServiceAccount+" "+p.Key())
	}
	want := []string{wh + " coordination.k8s.io/leases update (Role)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("unused:\n got %q\nwant %q", got, want)
	}
	f := Forbidden(reqs)
	if len(f) != 1 || f[0].Resource != "pods" || f[0].Verb != "delete" {
		t.Errorf("forbidden: %+v", f)
	}
}

func TestStopping(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1700000000+int64(s), 0) }
	reqs := []Request{
		// Pod a: refused while it worked on (a missing rule), then refused at its end.
		{Pod: "a", At: at(1)},
		{Pod: "a", At: at(2), Forbidden: true},
		{Pod: "a", At: at(3)},
		{Pod: "a", At: at(4), Forbidden: true},
		{Pod: "a", At: at(5), Forbidden: true},
		// Pod b: every request refused, none allowed (its rules gone before it began).
		{Pod: "b", At: at(1), Forbidden: true},
		// No pod: never excused.
		{At: at(9), Forbidden: true},
	}
	got := Stopping(reqs)
	want := map[int]bool{3: true, 4: true}
	if len(got) != len(want) {
		t.Errorf("stopping %v, want %v", got, want)
	}
	for i := range want {
		if !got[i] {
			t.Errorf("request %d not stopping, want it excused", i)
		}
	}
}
