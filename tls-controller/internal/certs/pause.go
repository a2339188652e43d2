package certs

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// Pause. While the cluster-controller reports the cluster Paused, a new certificate that
// passed every check is not copied into {cluster}-tls-accepted, so no member reloads it
// and no pod mounts it: the members keep serving the accepted one, and TLSReady=False
// reason Paused says what waits. The hold is at the copy, not at the reload: once the
// copy holds a revision every pod's mounted files follow it, so a member that restarts
// (healing goes on) would load it anyway, and holding the reloads would only leave the
// members serving different certificates. A rollout under way when the pause begins
// therefore completes.
//
// An expiring certificate is not held: when the one the members serve is inside the
// expiry warning window (CertificateExpiring=True) or expired, its renewal is rolled out
// as usual, with a RolloutNotHeld event, because an expired certificate fails every new
// connection of clients, replicas and the cluster bus, which is an outage the pause is
// not meant to cause. A held renewal is rolled out at the latest when the served
// certificate enters the window (CertificateExpiring's own requeue), and at the resume
// through the watch on the Paused condition.

// holdDecision is what a paused cluster does with an accepted certificate.
type holdDecision int

const (
	// rollOut: not paused, nothing new, or nothing served yet (members need one to start).
	rollOut holdDecision = iota
	// holdNew: the new certificate waits for the resume.
	holdNew
	// rollOutExpiring: paused, but the served certificate expires within window.
	rollOutExpiring
)

// decideHold decides for an accepted certificate, given the one served (nil: none).
func decideHold(paused bool, served, accepted *Certificate, now time.Time, window time.Duration) holdDecision {
	if !paused || served == nil || accepted == nil || served.Revision == accepted.Revision {
		return rollOut
	}
	if !now.Before(served.Leaf.NotAfter.Add(-window)) {
		return rollOutExpiring
	}
	return holdNew
}

// heldCondition is TLSReady while a paused cluster holds an accepted certificate (pure);
// source names the certificate Secret.
func heldCondition(source string, held, served *Certificate, window time.Duration, gen int64) metav1.Condition {
	msg := fmt.Sprintf("the cluster is paused: the certificate of %s (fingerprint %s, expires %s) passed every check and is held until it is resumed; "+
		"members keep serving fingerprint %s (expires %s), and a renewal is rolled out even while paused once that one is within %s of its end",
		source, held.Fingerprint, formatTime(held.Leaf.NotAfter), served.Fingerprint, formatTime(served.Leaf.NotAfter), window)
	return conditions.New(v1alpha1.ConditionTLSReady, false, v1alpha1.ReasonPaused, msg, gen)
}
