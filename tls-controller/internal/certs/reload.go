package certs

import (
	"context"
	"crypto/tls"
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
	"github.com/valkey-operator/valkey-operator/valkey"
	"github.com/valkey-operator/valkey-operator/valkeyconf/redact"
)

// TLSDir is where the node-controller mounts the operator's copy in every pod; the
// server reads tls.crt, tls.key and ca.crt there (valkey.conf names these paths).
const TLSDir = "/etc/valkey/tls"

const (
	// memberWorkers bounds how many members are probed and reloaded at the same time.
	memberWorkers = 4
	// retryUnreachable is the requeue for a member that cannot be reached: a new pod
	// IP or a restarted pod (both watched) bring the next pass sooner.
	retryUnreachable = 30 * time.Second
)

// DefaultFiles are the certificate files of a member's server.
func DefaultFiles(*v1alpha1.ValkeyNode) valkey.TLSFiles {
	return valkey.TLSFiles{CertFile: TLSDir + "/" + KeyCert, KeyFile: TLSDir + "/" + KeyKey, CAFile: TLSDir + "/" + KeyCA}
}

// memberResult is what the rollout learnt about one member.
type memberResult struct {
	// Served: the member serves the copy's revision.
	Served bool
	// Reloaded: a reload of this pass made it serve the revision.
	Reloaded bool
	// Message says why it does not serve it yet.
	Message string
	// RefusedByServer holds the server's answer when it refused the reload.
	RefusedByServer string
	// RetryAt, when set, is when the member can next make progress.
	RetryAt time.Time
}

// target is what every member must serve.
type target struct {
	revision    string
	fingerprint string
	// tls verifies members' certificates against the copy's CAs (and earlier ones
	// during a CA change), without host names: certificates name Services, not pods.
	tls *tls.Config
	// reloadAfter is non-zero when the leaf cannot show the revision (see
	// served.reloadAfter); rolledOut says every member was seen serving it.
	reloadAfter time.Time
	rolledOut   bool
}

// newTarget describes the copy as the target of the rollout.
func newTarget(s *served) target {
	return target{revision: s.revision(), fingerprint: s.cert.Fingerprint, tls: valkey.VerifyChainOnly(s.trust()),
		reloadAfter: s.reloadAfter, rolledOut: s.rolledOut()}
}

// Reload makes the server re-read its certificate files: one CONFIG SET of the three
// paths, which the server applies atomically (a pair it cannot load is refused and the
// certificate it had stays). Connections already open keep their session.
func Reload(ctx context.Context, c *valkey.Client, files valkey.TLSFiles) error {
	return c.ConfigSet(ctx, map[string]string{
		"tls-cert-file":    files.CertFile,
		"tls-key-file":     files.KeyFile,
		"tls-ca-cert-file": files.CAFile,
	})
}

// rollout brings every member to the copy's revision and returns the results by
// ValkeyNode name. Members are handled in parallel (a few at a time), each with short
// timeouts, so a dead pod costs one bounded handshake.
func (r *Reconciler) rollout(ctx context.Context, s *scope) map[string]memberResult {
	t := newTarget(s.served)
	cred, credErr := r.credentials(ctx, s.Cluster, t)
	results := make(map[string]memberResult, len(s.nodes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, memberWorkers)
	for i := range s.nodes {
		vn := &s.nodes[i]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res := r.rollMember(ctx, vn, t, cred, credErr, s.Now)
			mu.Lock()
			results[vn.Name] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
	return results
}

// credentials are the operator's credentials with the rollout's trust: the CAs of the
// copy and of earlier revisions, so members still serving a certificate of an old CA
// are reached during a CA change.
func (r *Reconciler) credentials(ctx context.Context, vc *v1alpha1.ValkeyCluster, t target) (valkeyconn.Credentials, error) {
	cred, err := valkeyconn.ForCluster(ctx, r.Client, vc)
	if err != nil {
		return cred, err
	}
	cred.TLS = t.tls
	return cred, nil
}

// rollMember checks what one member serves and reloads it when it is behind. A member
// counts as serving the revision when a new handshake shows the leaf of the copy, or,
// when the leaf cannot prove it (the target has a reloadAfter time), after a reload at
// or after that time.
func (r *Reconciler) rollMember(ctx context.Context, vn *v1alpha1.ValkeyNode, t target, cred valkeyconn.Credentials, credErr error, now time.Time) memberResult {
	if why := r.unreachableReason(vn); why != "" {
		return memberResult{Message: why, RetryAt: now.Add(retryUnreachable)}
	}
	addr := r.MemberAddr(vn)
	before, err := valkey.ServedCertificate(ctx, addr, t.tls, r.dialTimeout())
	if err != nil {
		return memberResult{Message: redact.Text(err.Error()), RetryAt: now.Add(retryUnreachable)}
	}
	showsLeaf := valkey.Fingerprint(before) == t.fingerprint
	if showsLeaf && r.servesWithoutReload(vn, t) {
		return memberResult{Served: true}
	}
	if showsLeaf && now.Before(t.reloadAfter) {
		return memberResult{RetryAt: t.reloadAfter, Message: fmt.Sprintf(
			"ca.crt changed but the certificate did not, so the served certificate cannot show the new files: the member is reloaded at %s, when the kubelet has surely updated them",
			formatTime(t.reloadAfter))}
	}
	if credErr != nil {
		return memberResult{Message: "cannot reload: the operator's credentials are not readable: " + credErr.Error()}
	}
	if res, ok := r.reloadMember(ctx, vn, addr, cred); !ok {
		return res
	}
	after, err := valkey.ServedCertificate(ctx, addr, t.tls, r.dialTimeout())
	if err != nil {
		return memberResult{Message: "after the reload: " + redact.Text(err.Error())}
	}
	if valkey.Fingerprint(after) != t.fingerprint {
		return memberResult{Message: fmt.Sprintf("the server still serves certificate %s: the pod's files are not updated yet "+
			"(the kubelet refreshes mounted Secrets within about a minute)", valkey.Fingerprint(after))}
	}
	if !t.reloadAfter.IsZero() {
		r.reloads.Store(vn.UID, t.revision)
	}
	return memberResult{Served: true, Reloaded: !showsLeaf || !t.reloadAfter.IsZero()}
}

// unreachableReason says why a member cannot be checked now ("" when it can).
func (r *Reconciler) unreachableReason(vn *v1alpha1.ValkeyNode) string {
	if want := v1alpha1.TLSSecretName(vn.Spec.ClusterName); vn.Spec.TLSSecretName != want {
		return fmt.Sprintf("the member does not mount Secret %s (spec.tlsSecretName is %q)", want, vn.Spec.TLSSecretName)
	}
	if vn.Status.PodIP == "" && r.Addr == nil {
		return "the member has no pod IP yet"
	}
	return ""
}

// servesWithoutReload reports whether showing the target's leaf is enough for vn: the
// leaf changed with the revision, every member was seen serving it already, or this
// process reloaded vn late enough for it.
func (r *Reconciler) servesWithoutReload(vn *v1alpha1.ValkeyNode, t target) bool {
	if t.reloadAfter.IsZero() || t.rolledOut {
		return true
	}
	rev, ok := r.reloads.Load(vn.UID)
	return ok && rev == t.revision
}

// reloadMember runs the reload on one member. It returns false with the result to
// report when the reload did not happen.
func (r *Reconciler) reloadMember(ctx context.Context, vn *v1alpha1.ValkeyNode, addr string, cred valkeyconn.Credentials) (memberResult, bool) {
	c, err := r.Pool.Client(ctx, addr, cred)
	if err != nil {
		return memberResult{Message: "cannot reload: " + redact.Text(err.Error())}, false
	}
	err = Reload(ctx, c, r.files(vn))
	if err == nil {
		return memberResult{}, true
	}
	if msg, ok := valkey.ServerMessage(err); ok {
		log.FromContext(ctx).Info("the server refused to reload its certificate", "node", vn.Name, "reason", msg)
		return memberResult{Message: "the server refused to reload its certificate: " + msg, RefusedByServer: msg}, false
	}
	r.Pool.Drop(c)
	return memberResult{Message: "cannot reload: " + redact.Text(err.Error())}, false
}

// complete reports whether every member serves the revision (and there is at least one).
func complete(results map[string]memberResult) bool {
	for _, res := range results {
		if !res.Served {
			return false
		}
	}
	return len(results) > 0
}

// nextRetry returns when the rollout should run again: retryPending while a member waits
// for its files, or the earliest RetryAt of members that wait for a time (the reload
// time of a CA change) or cannot be reached.
func nextRetry(results map[string]memberResult, now time.Time, retryPending time.Duration) time.Duration {
	var after time.Duration
	for _, res := range results {
		if res.Served {
			continue
		}
		d := retryPending
		if !res.RetryAt.IsZero() {
			d = max(res.RetryAt.Sub(now), time.Second)
		}
		if after == 0 || d < after {
			after = d
		}
	}
	return after
}
