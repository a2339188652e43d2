package acl

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/conditions"
)

// Pause. While the cluster-controller reports the cluster Paused, this controller starts
// no planned rollout: an aclfile that differs from the published one is rendered and
// checked but neither published nor applied, and a rotation of the system passwords
// neither starts nor moves to its next phase (every phase is a state in which every
// member accepts every password a client may hold, so a rotation may stop in any of
// them). What heals goes on, with the published file: a member that lost or changed a
// user of that file (ACL drift, a replacement member) is given the file again, as
// leaving the drift in place would keep a door open that the spec closed. The first
// file of a cluster is never held: members cannot start without one. The watch on the
// Paused condition starts the held rollout at the resume.

// hold is what a pass holds because the cluster is paused.
type hold struct {
	// file: the rendered file is held; the pass works with the published one.
	file bool
	// rendered is the file the spec asks for (set when file is).
	rendered File
	// rotation: a rotation is requested or under way and does not advance.
	rotation bool
}

func (h hold) any() bool { return h.file || h.rotation }

// decideHold returns what a pass over a paused cluster holds (nothing when the cluster
// is not paused).
func decideHold(vc *v1alpha1.ValkeyCluster, published *corev1.Secret, rendered File, rot Rotation) hold {
	if !v1alpha1.Paused(vc) {
		return hold{}
	}
	var h hold
	if published != nil && published.Annotations[annotationRevision] != rendered.Revision {
		h.file, h.rendered = true, rendered
	}
	h.rotation = rot.Phase != PhaseIdle || rot.Requested(vc.Annotations[v1alpha1.AnnotationRotateSystemPasswords])
	return h
}

// publishedFile is the file of the published aclfile Secret.
func publishedFile(s *corev1.Secret) File {
	return File{Users: ParseFile(string(s.Data[v1alpha1.ACLFileKey])), Revision: s.Annotations[annotationRevision]}
}

// heldCondition is ACLReady while a paused cluster holds a rollout (pure): False,
// reason Paused, naming what waits and what the members keep.
func heldCondition(h hold, live File, rot Rotation, gen int64) metav1.Condition {
	var parts []string
	if h.file {
		parts = append(parts, fmt.Sprintf("aclfile revision %s with %d users is held", h.rendered.Revision, len(h.rendered.Users)))
	}
	if h.rotation {
		if rot.Phase == PhaseIdle {
			parts = append(parts, "the requested rotation of the system users' passwords does not start")
		} else {
			parts = append(parts, fmt.Sprintf("the rotation of the system users' passwords stays in phase %s", rot.Phase))
		}
	}
	msg := fmt.Sprintf("the cluster is paused: %s until it is resumed; members keep aclfile revision %s, and users changed on a server are still put back",
		strings.Join(parts, ", and "), live.Revision)
	return conditions.New(v1alpha1.ConditionACLReady, false, v1alpha1.ReasonPaused, msg, gen)
}
