package acl

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/publish"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
)

// passwordLength is the length of generated passwords: 48 characters of [A-Za-z0-9],
// about 285 bits, and safe in a config file, an environment variable and JSON.
const passwordLength = 48

const passwordAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// GeneratePassword returns a random password from crypto/rand.
func GeneratePassword() (string, error) {
	b := make([]byte, passwordLength)
	n := big.NewInt(int64(len(passwordAlphabet)))
	for i := range b {
		k, err := rand.Int(rand.Reader, n)
		if err != nil {
			return "", fmt.Errorf("generate password: %w", err)
		}
		b[i] = passwordAlphabet[k.Int64()]
	}
	return string(b), nil
}

// Annotation of the aclfile Secret listing the users an earlier revision defined and
// the current one does not (JSON: name -> RFC 3339 time of removal). They are deleted
// from every member that still has them; an entry is dropped once every member runs a
// revision without it and the mounted files had time to catch up.
const annotationRemovedUsers = "valkey.io/acl-removed-users"

// Annotation of the aclfile Secret holding its revision.
const annotationRevision = "valkey.io/acl-revision"

// primaryAuthConf is the config snippet servers include for replication.
func primaryAuthConf(password string) []byte {
	return []byte("primaryauth " + password + "\n")
}

// exporterPasswordFile is redis_exporter's -redis.password-file for the _exporter
// password: the scraped URI with the user is the key (see
// v1alpha1.ExporterPasswordFileKey).
func exporterPasswordFile(password string) []byte {
	return v1alpha1.ExporterPasswordFile(password, valkeyconn.Port)
}

// newSystemUsersData generates the passwords of the system users and the derived keys.
func newSystemUsersData() (map[string][]byte, error) {
	data := map[string][]byte{}
	for _, u := range systemUserNames {
		pw, err := GeneratePassword()
		if err != nil {
			return nil, err
		}
		data[u] = []byte(pw)
	}
	setDerivedKeys(data)
	return data, nil
}

// setDerivedKeys writes the keys derived from the current passwords.
func setDerivedKeys(data map[string][]byte) {
	data[v1alpha1.PrimaryAuthKey] = primaryAuthConf(string(data[v1alpha1.UserReplication]))
	data[v1alpha1.ExporterPasswordFileKey] = exporterPasswordFile(string(data[v1alpha1.UserExporter]))
}

// ownedMeta sets labels and the controller reference of a Secret of the cluster.
func ownedMeta(s *corev1.Secret, vc *v1alpha1.ValkeyCluster, scheme *runtime.Scheme) error {
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	for k, v := range v1alpha1.ClusterLabels(vc.Name) {
		s.Labels[k] = v
	}
	s.Labels[v1alpha1.LabelComponent] = "acl"
	if err := controllerutil.SetControllerReference(vc, s, scheme); err != nil {
		return fmt.Errorf("set owner of Secret %s: %w", s.Name, err)
	}
	return nil
}

// ensureSystemUsers returns the cluster's system users Secret, creating it with new
// passwords when it does not exist (created says so), and filling in keys that are
// missing.
func (r *Reconciler) ensureSystemUsers(ctx context.Context, vc *v1alpha1.ValkeyCluster) (_ *corev1.Secret, created bool, _ error) {
	name := v1alpha1.SystemUsersSecretName(vc.Name)
	var s corev1.Secret
	err := r.Secrets().Get(ctx, types.NamespacedName{Namespace: vc.Namespace, Name: name}, &s)
	if apierrors.IsNotFound(err) {
		sec, err := r.createSystemUsers(ctx, vc, name)
		return sec, err == nil, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("read Secret %s: %w", name, err)
	}
	if !metav1.IsControlledBy(&s, vc) {
		// Never adopted: whoever created it would know the operator's passwords.
		return nil, false, &publish.NameConflictError{Name: name}
	}
	if !s.DeletionTimestamp.IsZero() {
		// Deleted by hand: the finalizer keeps it, and the running servers only know these
		// passwords. New ones could not reach them.
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, "SystemUsersSecretDeleted", "Protect",
			"Secret %s was deleted; it is kept while the cluster exists: the members only accept the passwords it holds", name)
		return &s, false, nil
	}
	before := s.DeepCopy()
	if err := completeSystemUsers(&s); err != nil {
		return nil, false, err
	}
	if err := ownedMeta(&s, vc, r.Scheme); err != nil {
		return nil, false, err
	}
	controllerutil.AddFinalizer(&s, keepFinalizer)
	if equalSecret(before, &s) {
		return &s, false, nil
	}
	if err := r.Client.Update(ctx, &s); err != nil {
		return nil, false, fmt.Errorf("update Secret %s: %w", name, err)
	}
	return &s, false, nil
}

// createSystemUsers creates the system users Secret. (A rotation requested before the
// cluster existed is recorded as done by the caller: the passwords are new anyway.)
func (r *Reconciler) createSystemUsers(ctx context.Context, vc *v1alpha1.ValkeyCluster, name string) (*corev1.Secret, error) {
	data, err := newSystemUsersData()
	if err != nil {
		return nil, err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: vc.Namespace, Name: name},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
	if err := ownedMeta(s, vc, r.Scheme); err != nil {
		return nil, err
	}
	controllerutil.AddFinalizer(s, keepFinalizer)
	if err := r.Client.Create(ctx, s); err != nil {
		return nil, fmt.Errorf("create Secret %s: %w", name, err)
	}
	return s, nil
}

// keepFinalizer holds the system users Secret while its cluster exists: its passwords are
// the only ones the running servers accept, so losing them would lock the operator out.
const keepFinalizer = "valkey.io/keep-while-cluster-exists"

// releaseSystemUsers lets the system users Secret of a cluster that is gone (or going) be
// deleted with it.
func (r *Reconciler) releaseSystemUsers(ctx context.Context, key types.NamespacedName) error {
	var s corev1.Secret
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: v1alpha1.SystemUsersSecretName(key.Name)}, &s)
	if apierrors.IsNotFound(err) || (err == nil && !controllerutil.ContainsFinalizer(&s, keepFinalizer)) {
		return nil
	}
	if err != nil {
		return err
	}
	patch := client.MergeFrom(s.DeepCopy())
	controllerutil.RemoveFinalizer(&s, keepFinalizer)
	if err := r.Client.Patch(ctx, &s, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("release Secret %s: %w", s.Name, err)
	}
	return nil
}

// completeSystemUsers generates any missing password and rewrites the derived keys
// from the current passwords. A missing password is a lost one: the servers will not
// know the new one until they load the next aclfile, so this only repairs a Secret
// someone damaged.
func completeSystemUsers(s *corev1.Secret) error {
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for _, u := range systemUserNames {
		if len(s.Data[u]) > 0 {
			continue
		}
		pw, err := GeneratePassword()
		if err != nil {
			return err
		}
		s.Data[u] = []byte(pw)
	}
	setDerivedKeys(s.Data)
	return nil
}

// equalSecret compares what this controller writes of a Secret.
func equalSecret(a, b *corev1.Secret) bool {
	if len(a.Data) != len(b.Data) || !equalStringMaps(a.Labels, b.Labels) ||
		!equalStringMaps(a.Annotations, b.Annotations) || len(a.OwnerReferences) != len(b.OwnerReferences) {
		return false
	}
	for k, v := range a.Data {
		if string(b.Data[k]) != string(v) {
			return false
		}
	}
	for i := range a.OwnerReferences {
		if a.OwnerReferences[i].UID != b.OwnerReferences[i].UID {
			return false
		}
	}
	return true
}

func equalStringMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// publishACL writes the aclfile Secret when its content or removed-users list changed.
func (r *Reconciler) publishACL(ctx context.Context, vc *v1alpha1.ValkeyCluster, s *corev1.Secret, f File, removed removedUsers) (*corev1.Secret, error) {
	if s == nil {
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: vc.Namespace, Name: v1alpha1.ACLSecretName(vc.Name)}, Type: corev1.SecretTypeOpaque}
	} else {
		s = s.DeepCopy()
	}
	before := s.DeepCopy()
	s.Data = map[string][]byte{v1alpha1.ACLFileKey: []byte(f.Content())}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[annotationRevision] = f.Revision
	if len(removed) > 0 {
		s.Annotations[annotationRemovedUsers] = removed.encode()
	} else {
		delete(s.Annotations, annotationRemovedUsers)
	}
	if err := ownedMeta(s, vc, r.Scheme); err != nil {
		return nil, err
	}
	switch {
	case s.ResourceVersion == "":
		if err := r.Client.Create(ctx, s); err != nil {
			return nil, fmt.Errorf("create Secret %s: %w", s.Name, err)
		}
	case !equalSecret(before, s):
		if err := r.Client.Update(ctx, s); err != nil {
			return nil, fmt.Errorf("update Secret %s: %w", s.Name, err)
		}
	}
	return s, nil
}

// readACLSecret returns the published aclfile Secret, or nil when there is none.
func (r *Reconciler) readACLSecret(ctx context.Context, vc *v1alpha1.ValkeyCluster) (*corev1.Secret, error) {
	var s corev1.Secret
	name := v1alpha1.ACLSecretName(vc.Name)
	err := r.Secrets().Get(ctx, types.NamespacedName{Namespace: vc.Namespace, Name: name}, &s)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read Secret %s: %w", name, err)
	}
	if !metav1.IsControlledBy(&s, vc) {
		return nil, &publish.NameConflictError{Name: name}
	}
	return &s, nil
}

// removedUsers are users an earlier revision defined, with the time they were removed.
type removedUsers map[string]time.Time

func decodeRemoved(s *corev1.Secret) removedUsers {
	out := removedUsers{}
	if s == nil || s.Annotations[annotationRemovedUsers] == "" {
		return out
	}
	var raw map[string]string
	if err := json.Unmarshal([]byte(s.Annotations[annotationRemovedUsers]), &raw); err != nil {
		return out
	}
	for name, ts := range raw {
		t, err := time.Parse(time.RFC3339, ts)
		if err != nil {
			t = time.Time{}
		}
		out[name] = t
	}
	return out
}

func (r removedUsers) encode() string {
	raw := map[string]string{}
	for name, t := range r {
		raw[name] = t.UTC().Format(time.RFC3339)
	}
	b, _ := json.Marshal(raw) // a map of strings always marshals
	return string(b)
}

// names returns the removed users sorted.
func (r removedUsers) names() []string {
	out := make([]string, 0, len(r))
	for n := range r {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// nextRemoved returns the removed users after publishing f over the previous file:
// users of the previous file missing from f are added, users of f are dropped, and,
// when prune is true, entries older than keep are forgotten.
func nextRemoved(prev removedUsers, previous []User, f File, now time.Time, prune bool, keep time.Duration) removedUsers {
	out := removedUsers{}
	for n, t := range prev {
		out[n] = t
	}
	current := map[string]bool{}
	for _, n := range f.Names() {
		current[n] = true
		delete(out, n)
	}
	for _, u := range previous {
		if !current[u.Name] {
			if _, ok := out[u.Name]; !ok {
				out[u.Name] = now
			}
		}
	}
	if prune {
		for n, t := range out {
			if now.Sub(t) >= keep {
				delete(out, n)
			}
		}
	}
	return out
}

// passwordProblem says why the passwords of a user cannot be read.
type passwordProblem struct {
	User, Secret, Key string
	// SecretMissing is true when the Secret itself does not exist.
	SecretMissing bool
	// Kept is true when the user's previous rules stay in the aclfile (else the user
	// is left out).
	Kept bool
}

func (p passwordProblem) String() string {
	if p.SecretMissing {
		return fmt.Sprintf("user %s: Secret %s not found", p.User, p.Secret)
	}
	return fmt.Sprintf("user %s: Secret %s has no key %s", p.User, p.Secret, p.Key)
}

// userPasswords reads the passwords of a spec user from its Secret, in key order.
func (r *Reconciler) userPasswords(ctx context.Context, namespace string, u v1alpha1.UserSpec) ([]string, *passwordProblem, error) {
	if u.NoPass || u.PasswordSecret == nil {
		return nil, nil, nil
	}
	ref := u.PasswordSecret
	var s corev1.Secret
	err := r.secrets().Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, &s)
	if apierrors.IsNotFound(err) {
		return nil, &passwordProblem{User: u.Name, Secret: ref.Name, SecretMissing: true}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read Secret %s of user %s: %w", ref.Name, u.Name, err)
	}
	out := make([]string, 0, len(ref.Keys))
	for _, k := range ref.Keys {
		v, ok := s.Data[k]
		if !ok || len(v) == 0 {
			return nil, &passwordProblem{User: u.Name, Secret: ref.Name, Key: k}, nil
		}
		out = append(out, string(v))
	}
	return out, nil, nil
}
