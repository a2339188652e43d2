// Package rbacaudit compares the RBAC rules the chart gives each of the operator's
// components with what its service account actually did, as the local Kubernetes' API
// server recorded it in its audit log during the e2e suites (docs/security.md).
package rbacaudit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Request is one request of a service account, from an audit event at Metadata level.
type Request struct {
	ServiceAccount string // namespace/name
	Verb           string
	APIGroup       string
	Resource       string // with its subresource: pods/eviction
	Namespace      string
	Name           string
	Code           int
	// Forbidden: RBAC refused it (the audit annotation authorization.k8s.io/decision);
	// a 403 for other reasons (a namespace being deleted) is not.
	Forbidden bool
	// Pod is the UID of the pod whose token made the request ("" when the token is not
	// bound to a pod), and At when the API server received it.
	Pod string
	At  time.Time
}

// auditEvent is the part of an audit.k8s.io/v1 Event that is read.
type auditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string              `json:"username"`
		Extra    map[string][]string `json:"extra"`
	} `json:"user"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
	ObjectRef       *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Annotations map[string]string `json:"annotations"`
}

const saPrefix = "system:serviceaccount:"

// ReadRequests reads an audit log (JSON lines) and returns the resource requests of
// service accounts in namespace ns (a watch appears twice: when its response starts and
// when it ends). Requests without an
// object (discovery, /version) are left out: no rule of the chart is about them.
func ReadRequests(r io.Reader, ns string) ([]Request, error) {
	var out []Request
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit event: %w", err)
		}
		sa, ok := strings.CutPrefix(e.User.Username, saPrefix)
		if !ok || !strings.HasPrefix(sa, ns+":") || e.ObjectRef == nil {
			continue
		}
		res := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			res += "/" + e.ObjectRef.Subresource
		}
		code := 0
		if e.ResponseStatus != nil {
			code = e.ResponseStatus.Code
		}
		pod := ""
		if uids := e.User.Extra["authentication.kubernetes.io/pod-uid"]; len(uids) > 0 {
			pod = uids[0]
		}
		out = append(out, Request{ServiceAccount: strings.Replace(sa, ":", "/", 1), Verb: e.Verb,
			APIGroup: e.ObjectRef.APIGroup, Resource: res, Namespace: e.ObjectRef.Namespace, Name: e.ObjectRef.Name, Code: code,
			Forbidden: e.Annotations["authorization.k8s.io/decision"] == "forbid", Pod: pod, At: e.RequestReceived})
	}
	return out, sc.Err()
}

// Grant is one rule of a component, with the namespace of the Role that holds it
// (empty for a ClusterRole).
type Grant struct {
	ServiceAccount string // namespace/name
	Namespace      string
	Rule           rbacv1.PolicyRule
}

// Permission is one element of a rule: a verb on a resource of a group.
type Permission struct {
	ServiceAccount, Namespace, APIGroup, Resource, Verb string
	ResourceNames                                       []string
}

// Key names a permission in reports and the allow-list: "group/resource verb" (the
// core group as "core"), with the Role's namespace when it is one.
func (p Permission) Key() string {
	g := p.APIGroup
	if g == "" {
		g = "core"
	}
	k := fmt.Sprintf("%s/%s %s", g, p.Resource, p.Verb)
	if p.Namespace != "" {
		k += " (Role)"
	}
	return k
}

// Permissions expands grants into their permissions, one per group, resource and verb.
func Permissions(grants []Grant) []Permission {
	var out []Permission
	for _, g := range grants {
		if len(g.Rule.NonResourceURLs) > 0 {
			continue
		}
		for _, grp := range g.Rule.APIGroups {
			for _, res := range g.Rule.Resources {
				for _, v := range g.Rule.Verbs {
					out = append(out, Permission{ServiceAccount: g.ServiceAccount, Namespace: g.Namespace,
						APIGroup: grp, Resource: res, Verb: v, ResourceNames: g.Rule.ResourceNames})
				}
			}
		}
	}
	return out
}

// Uses says whether the request was allowed by p (RBAC's matching: wildcards, resource
// names, the Role's namespace).
func (p Permission) Uses(r Request) bool {
	if r.ServiceAccount != p.ServiceAccount {
		return false
	}
	if p.Namespace != "" && r.Namespace != p.Namespace {
		return false
	}
	match := func(have, want string) bool { return have == "*" || have == want }
	if !match(p.APIGroup, r.APIGroup) || !match(p.Resource, r.Resource) || !match(p.Verb, r.Verb) {
		return false
	}
	return len(p.ResourceNames) == 0 || slices.Contains(p.ResourceNames, r.Name)
}

// Unused returns the permissions no request used, sorted by service account and key.
func Unused(perms []Permission, reqs []Request) []Permission {
	var out []Permission
	for _, p := range perms {
		used := false
		for _, r := range reqs {
			if authorized(r) && p.Uses(r) {
				used = true
				break
			}
		}
		if !used {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ServiceAccount != out[j].ServiceAccount {
			return out[i].ServiceAccount < out[j].ServiceAccount
		}
		return out[i].Key() < out[j].Key()
	})
	return out
}

// authorized says whether RBAC let the request through, whatever came of it after (a
// get answered 404 was authorized).
func authorized(r Request) bool { return r.Code != 401 && !r.Forbidden }

// Forbidden returns the requests RBAC refused: a rule the code needs and the chart lacks.
func Forbidden(reqs []Request) []Request {
	var out []Request
	for _, r := range reqs {
		if r.Forbidden {
			out = append(out, r)
		}
	}
	return out
}

// Stopping returns, of the refused requests, those its pod made after its last allowed
// request: a pod whose rules were deleted under it, as helm does when it uninstalls the
// chart or turns a component off (it deletes the Role with the Deployment, and the pod
// still renews its lease or reads its Secret while it stops). A rule the code lacks shows
// otherwise: the pod goes on working, and its other requests are allowed after the
// refusal, and a pod refused from its start never worked, so it is not excused either.
func Stopping(reqs []Request) map[int]bool {
	last := map[string]time.Time{}
	for _, r := range reqs {
		if r.Pod != "" && !r.Forbidden && r.At.After(last[r.Pod]) {
			last[r.Pod] = r.At
		}
	}
	out := map[int]bool{}
	for i, r := range reqs {
		if l, worked := last[r.Pod]; r.Forbidden && r.Pod != "" && worked && r.At.After(l) {
			out[i] = true
		}
	}
	return out
}
