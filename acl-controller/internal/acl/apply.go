package acl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkeyconf/redact"
)

// Live rollout. The mounted aclfile lags behind the Secret (kubelet sync), so the
// controller sends the rendered users to each member itself, in one MULTI/EXEC per
// member:
//
//	ACL SETUSER <user> reset <rules...>      for every user of the file, system users first
//	ACL DELUSER <user>                        for users an earlier revision defined
//	ACL DELUSER <old marker>                  for markers of other revisions
//	ACL SETUSER _acl-rev-<revision> reset off the marker of this revision
//
// No client sees a member between two of these commands, and a user's own connections
// stay open (ACL SETUSER keeps them; ACL LOAD of a lagging file would instead go back to
// an older set). EXEC does not roll back, so the rules are checked first on that same
// member with scratch users (see CheckLive): a transaction that runs holds only
// accepted rules. Should an op still fail, the new marker is deleted again, so the
// member never claims a revision it does not fully run. A member runs a revision when
// ACL USERS lists its marker; that one cheap command is the steady-state check.

// memberTimeout bounds all the work on one member in a pass.
const memberTimeout = 10 * time.Second

// MemberResult is the outcome of a pass on one member.
type MemberResult struct {
	// Applied: the member runs the revision.
	Applied bool
	// Message says why not (or what was done).
	Message string
	// Reachable: the controller could log in.
	Reachable bool
	// Refused are users this member refuses (unexpected after validation: mixed
	// versions).
	Refused Refusals
	// Corrected are users of the file whose rules had been changed on the server and
	// were put back in this pass.
	Corrected []string
	// TooLarge is set when the member answered a command with more than the controller
	// reads (valkey.ErrReplyTooLarge): waiting a few seconds does not change that.
	TooLarge *valkey.ReplyTooLargeError
	// Login is what the member answered the operator's login (login.go).
	Login loginAnswer
	// err is the error that ended the work on the member (nil when none).
	err error
}

// failed is the result of a member whose command failed: its client is dropped (a
// network error or a refused reply leaves it unusable). what prefixes the error.
func (r *Reconciler) failed(mc *memberConn, what string, err error) MemberResult {
	r.Pool.Drop(mc.client)
	msg := redact.Text(err.Error())
	if what != "" {
		msg = what + ": " + msg
	}
	return MemberResult{Reachable: true, Message: msg, TooLarge: valkey.AsReplyTooLarge(err), err: err}
}

// members returns the ValkeyNodes that have a pod IP, and the others.
func members(nodes []v1alpha1.ValkeyNode) (withIP, without []v1alpha1.ValkeyNode) {
	for _, n := range nodes {
		if n.Status.PodIP != "" {
			withIP = append(withIP, n)
		} else {
			without = append(without, n)
		}
	}
	return withIP, without
}

// connect logs in to addr with the first credentials the member accepts: the current
// _operator password, then the previous or next one of a running rotation.
func (r *Reconciler) connect(ctx context.Context, addr string, creds []valkeyconn.Credentials) (*valkey.Client, error) {
	var last error
	for _, cred := range creds {
		c, err := r.Pool.Client(ctx, addr, cred)
		if err == nil {
			return c, nil
		}
		last = err
		if !isAuthError(err) {
			break
		}
	}
	return nil, fmt.Errorf("connect to %s: %w", addr, last)
}

// isAuthError reports whether err is the server refusing the credentials.
func isAuthError(err error) bool {
	msg, ok := valkey.ServerMessage(err)
	return ok && (strings.HasPrefix(msg, "WRONGPASS") || strings.HasPrefix(msg, "NOAUTH"))
}

// memberConn is a member reached (or not) in this pass.
type memberConn struct {
	node *v1alpha1.ValkeyNode
	addr string
	// client is nil when the member could not be reached; err says why.
	client *valkey.Client
	err    error
	// version of the server ("" when unknown): the node's status, or INFO server.
	version string
}

// reach connects to every member in parallel and learns its version.
func (r *Reconciler) reach(ctx context.Context, nodes []v1alpha1.ValkeyNode, creds []valkeyconn.Credentials) []*memberConn {
	out := make([]*memberConn, len(nodes))
	var wg sync.WaitGroup
	for i := range nodes {
		mc := &memberConn{node: &nodes[i], addr: r.MemberAddr(&nodes[i]), version: nodes[i].Status.Version}
		out[i] = mc
		if len(creds) == 0 {
			mc.err = errors.New("the operator's credentials are not readable")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, memberTimeout)
			defer cancel()
			mc.client, mc.err = r.connect(ctx, mc.addr, creds)
			if mc.client != nil && mc.version == "" {
				if v, err := mc.client.Version(ctx); err == nil {
					mc.version = v.String()
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// minVersion returns the lowest version of the members, or the zero version (the
// baseline) when one of them is unknown.
func minVersion(conns []*memberConn) valkey.Version {
	var low valkey.Version
	for i, mc := range conns {
		v, err := valkey.ParseVersion(mc.version)
		if err != nil {
			return valkey.Version{}
		}
		if i == 0 || versionLess(v, low) {
			low = v
		}
	}
	return low
}

func versionLess(a, b valkey.Version) bool {
	if a.Major != b.Major {
		return a.Major < b.Major
	}
	if a.Minor != b.Minor {
		return a.Minor < b.Minor
	}
	return a.Patch < b.Patch
}

// applyAll applies f on every reachable member in parallel. removed are users earlier
// revisions defined. The result is keyed by ValkeyNode name and holds every member.
func (r *Reconciler) applyAll(ctx context.Context, conns []*memberConn, f File, removed []string) map[string]MemberResult {
	out := make(map[string]MemberResult, len(conns))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, mc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := r.applyMember(ctx, mc, f, removed)
			mu.Lock()
			out[mc.node.Name] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// applyMember brings one member to the revision of f, and says what it answered the
// operator's login.
func (r *Reconciler) applyMember(ctx context.Context, mc *memberConn, f File, removed []string) MemberResult {
	if mc.client == nil {
		res := MemberResult{Message: fmt.Sprintf("cannot reach the server: %v", mc.err), err: mc.err}
		res.Login = answerOf(mc.err, false)
		return res
	}
	res := r.applyRevision(ctx, mc, f, removed)
	res.Login = answerOf(res.err, res.Reachable)
	return res
}

// applyRevision brings a member the controller logged in to to the revision of f.
func (r *Reconciler) applyRevision(ctx context.Context, mc *memberConn, f File, removed []string) MemberResult {
	ctx, cancel := context.WithTimeout(ctx, memberTimeout)
	defer cancel()
	c := mc.client
	users, err := c.ACLUsers(ctx)
	if err != nil {
		res := r.failed(mc, "cannot list the server's users", err)
		res.Reachable = false
		return res
	}
	marker := MarkerName(f.Revision)
	var drifted []string
	if slices.Contains(users, marker) {
		var known bool
		drifted, known, err = r.drift(ctx, mc, f)
		if err != nil {
			return r.failed(mc, "cannot list the server's users", err)
		}
		if known && len(drifted) == 0 {
			return MemberResult{Applied: true, Reachable: true, Message: "revision " + f.Revision + " is live"}
		}
		// Users of the file changed on the server since the controller applied it (a
		// client with +acl|setuser), or the controller has not seen this member since it
		// started: the users are sent again, which changes nothing on a member that runs
		// them.
	}
	refused, err := r.checkOn(ctx, mc, f.Users)
	if err != nil {
		return r.failed(mc, "cannot check the users on the server", err)
	}
	if len(refused) > 0 {
		return MemberResult{Reachable: true, Refused: refused, Message: "the server refuses " + describeRefusals(refused)}
	}
	if err := transaction(ctx, c, f, users, removed); err != nil {
		return r.failed(mc, "", err)
	}
	if err := r.recordApplied(ctx, mc, f); err != nil {
		return r.failed(mc, "cannot list the server's users", err)
	}
	msg := "revision " + f.Revision + " applied"
	if len(drifted) > 0 {
		msg = fmt.Sprintf("revision %s applied again: users %s had been changed on the server", f.Revision, strings.Join(drifted, ", "))
	}
	return MemberResult{Applied: true, Reachable: true, Message: msg, Corrected: drifted}
}

// ACL drift. A client granted +acl|setuser (or +@admin) may change the operator's users
// or re-enable default on one member; the revision marker would still be there. After
// each apply the controller records what the server lists for the file's users (ACL
// LIST, the server's own rendering of the rules it was sent), and every check compares
// the live list with that record: any difference applies the file again, with an event.
// The record is kept in memory per member address and revision; a controller that
// restarts applies the file once more to every member (harmless) to record it again.
// Users the file does not define are never touched.

// appliedLines is what a member listed for the users of a revision right after it was
// applied.
type appliedLines struct {
	revision string
	lines    map[string]string
}

// recordApplied stores what the member lists for f's users now.
func (r *Reconciler) recordApplied(ctx context.Context, mc *memberConn, f File) error {
	lines, err := listedLines(ctx, mc.client, f)
	if err != nil {
		return err
	}
	r.appliedMu.Lock()
	defer r.appliedMu.Unlock()
	if r.applied == nil {
		r.applied = map[string]appliedLines{}
	}
	r.applied[mc.node.Name+"/"+mc.addr] = appliedLines{revision: f.Revision, lines: lines}
	return nil
}

// drift returns the users of f whose live rules differ from what the member listed when
// f was applied; known is false when there is no record of this member and revision.
func (r *Reconciler) drift(ctx context.Context, mc *memberConn, f File) (drifted []string, known bool, err error) {
	r.appliedMu.Lock()
	rec, ok := r.applied[mc.node.Name+"/"+mc.addr]
	r.appliedMu.Unlock()
	if !ok || rec.revision != f.Revision {
		return nil, false, nil
	}
	live, err := listedLines(ctx, mc.client, f)
	if err != nil {
		return nil, true, err
	}
	for _, n := range f.Names() {
		if live[n] != rec.lines[n] {
			drifted = append(drifted, n)
		}
	}
	return drifted, true, nil
}

// listedLines is ACL LIST of the server for the users of f, by name.
func listedLines(ctx context.Context, c *valkey.Client, f File) (map[string]string, error) {
	list, err := c.ACLList(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, n := range f.Names() {
		names[n] = true
	}
	out := map[string]string{}
	for _, l := range list {
		fields := strings.Fields(l)
		if len(fields) >= 2 && names[fields[1]] {
			out[fields[1]] = l
		}
	}
	return out, nil
}

// applyOps builds the transaction that makes a member with users run f.
func applyOps(f File, users, removed []string) []valkey.ACLOp {
	ops := make([]valkey.ACLOp, 0, len(f.Users)+len(removed)+2)
	for _, u := range f.Users {
		ops = append(ops, valkey.ACLOp{Name: u.Name, Rules: u.LiveRules()})
	}
	present := map[string]bool{}
	for _, u := range users {
		present[u] = true
	}
	for _, n := range removed {
		if present[n] {
			ops = append(ops, valkey.ACLOp{Name: n, Delete: true})
		}
	}
	marker := MarkerName(f.Revision)
	for _, u := range users {
		if IsMarker(u) && u != marker {
			ops = append(ops, valkey.ACLOp{Name: u, Delete: true})
		}
	}
	return append(ops, valkey.ACLOp{Name: marker, Rules: []string{"reset", "off"}})
}

// transaction runs the ops of applyOps; on any refused op it deletes the new marker.
func transaction(ctx context.Context, c *valkey.Client, f File, users, removed []string) error {
	ops := applyOps(f, users, removed)
	errs, err := c.ACLTransaction(ctx, ops)
	if err != nil {
		return fmt.Errorf("apply revision %s: %w", f.Revision, err)
	}
	var failed []error
	for _, e := range errs {
		if e != nil {
			failed = append(failed, e)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	if err := c.ACLDelUser(ctx, MarkerName(f.Revision)); err != nil {
		failed = append(failed, fmt.Errorf("remove the marker again: %w", err))
	}
	return fmt.Errorf("apply revision %s: %w", f.Revision, errors.Join(failed...))
}

// checkOn checks users on one member, with the verdict cache.
func (r *Reconciler) checkOn(ctx context.Context, mc *memberConn, users []User) (Refusals, error) {
	scope := mc.version
	if scope == "" {
		scope = "addr:" + mc.addr
	}
	out := Refusals{}
	var todo []User
	for _, u := range users {
		if msg, ok := r.verdicts.get(scope, u); ok {
			if msg != "" {
				out[u.Name] = msg
			}
			continue
		}
		todo = append(todo, u)
	}
	if len(todo) == 0 {
		return out, nil
	}
	got, err := CheckLive(ctx, mc.client, todo)
	if err != nil {
		return nil, err
	}
	for _, u := range todo {
		r.verdicts.put(scope, u, got[u.Name])
		if msg := got[u.Name]; msg != "" {
			out[u.Name] = msg
		}
	}
	return out, nil
}

// verdictCache remembers the live check of a user line per server version (or
// address): the verdict of a server version on a rule never changes.
type verdictCache struct {
	mu sync.Mutex
	m  map[string]string
}

// verdictCacheMax bounds the cache; it is cleared when full.
const verdictCacheMax = 10000

func verdictKey(scope string, u User) string {
	sum := sha256.Sum256([]byte(u.Line()))
	return scope + "\x00" + hex.EncodeToString(sum[:])
}

func (v *verdictCache) get(scope string, u User) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	msg, ok := v.m[verdictKey(scope, u)]
	return msg, ok
}

func (v *verdictCache) put(scope string, u User, msg string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil || len(v.m) >= verdictCacheMax {
		v.m = map[string]string{}
	}
	v.m[verdictKey(scope, u)] = msg
}

// describeRefusals lists refusals as "user a (msg); user b (msg)" in name order.
func describeRefusals(ref Refusals) string {
	names := make([]string, 0, len(ref))
	for n := range ref {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("user %s (%s)", n, ref[n]))
	}
	return strings.Join(parts, "; ")
}

// setPrimaryAuth sets the replication password live on every member; it returns the
// members that failed, with the reason.
func (r *Reconciler) setPrimaryAuth(ctx context.Context, conns []*memberConn, password string) map[string]string {
	failed := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, mc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.configSetPrimaryAuth(ctx, mc, password); err != nil {
				mu.Lock()
				failed[mc.node.Name] = redact.Text(err.Error(), password)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed
}

func (r *Reconciler) configSetPrimaryAuth(ctx context.Context, mc *memberConn, password string) error {
	if mc.client == nil {
		return fmt.Errorf("cannot reach the server: %w", mc.err)
	}
	ctx, cancel := context.WithTimeout(ctx, memberTimeout)
	defer cancel()
	if err := mc.client.ConfigSet(ctx, map[string]string{"primaryauth": password}); err != nil {
		r.Pool.Drop(mc.client)
		return err
	}
	return nil
}

// reloadExporters asks the exporter of every member to re-read its password file
// (GET /-/reload of redis_exporter). It is best effort: an exporter that does not
// read its password from the mounted file, or that is down, keeps the old password
// (it reads the file again when it starts). It returns the members that failed.
func (r *Reconciler) reloadExporters(ctx context.Context, nodes []v1alpha1.ValkeyNode) map[string]string {
	failed := map[string]string{}
	for i := range nodes {
		vn := &nodes[i]
		if !vn.Spec.Exporter.IsEnabled() {
			continue
		}
		if err := r.reloadExporter(ctx, r.exporterURL(vn)); err != nil {
			failed[vn.Name] = redact.Text(err.Error())
		}
	}
	return failed
}

// exporterReloadTimeout bounds one reload request.
const exporterReloadTimeout = 2 * time.Second

func (r *Reconciler) reloadExporter(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, exporterReloadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("reload exporter: %w", err)
	}
	resp, err := r.httpClient().Do(req)
	if err != nil {
		return fmt.Errorf("reload exporter: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("reload exporter: HTTP %d", resp.StatusCode)
	}
	return nil
}

// defaultExporterURL is the reload endpoint of the member's exporter.
func defaultExporterURL(vn *v1alpha1.ValkeyNode) string {
	return "http://" + net.JoinHostPort(vn.Status.PodIP, "9121") + "/-/reload"
}
