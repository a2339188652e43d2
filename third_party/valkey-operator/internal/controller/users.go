/*
Copyright 2025 Valkey Contributors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controller

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"

	valkeyiov1alpha1 "github.com/valkey-io/valkey-operator/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

const (
	hashAnnotationKey = "valkey.io/internal-acl-hash"
	aclFilename       = "users.acl"
	passwordLength    = 26
	// aclRevisionUser is a disabled bookkeeping user appended to the
	// aclfile whose only password hash is the hash of the managed ACL content
	// above it. The ValkeyNode controller waits for this user to be present with
	// the current hash before reporting ACLApplied, which is how it knows the
	// running server loaded the current aclfile revision rather than a stale
	// mounted copy. Because the hash covers the whole managed ACL, it also
	// catches permission-only edits that leave user and password identities
	// unchanged. It is disabled (off), so its content-hash password is never a
	// usable credential.
	aclRevisionUser = "_operator_acl_revision"
)

var (
	operatorUser    = "_operator"
	exporterUser    = "_exporter"
	replicationUser = "_replication"
	systemUsers     = []string{operatorUser, exporterUser, replicationUser}
	systemUsersAcls = map[string]string{
		operatorUser: strings.Join([]string{
			"+@connection",               // client handshake (CLIENT TRACKING, SETINFO, AUTH, PING)
			"+cluster|myid",              // get node ID
			"+cluster|myshardid",         // get shard ID
			"+cluster|info",              // cluster state
			"+cluster|nodes",             // cluster topology
			"+cluster|meet",              // introduce nodes
			"+cluster|addslotsrange",     // assign slots
			"+cluster|replicate",         // set up replication
			"+cluster|forget",            // remove stale nodes
			"+cluster|failover",          // proactive failover before rolling primary
			"+cluster|getslotmigrations", // check migration status
			"+cluster|migrateslots",      // migrate slots between shards
			"+cluster|set-config-epoch",  // set epoch on new nodes
			"+config|set",                // apply live config changes
			"+config|get",                // verify applied config / audit current state
			"+acl|load",                  // reload the aclfile live to apply ACL changes without a pod roll
			"+acl|getuser",               // read back a user's password hashes to verify the reload landed
			"+acl|users",                 // read the user set to verify membership after a reload
			"+info",                      // node info and replication status
			"+role",                      // current replication role
		}, " "),
		// the ACL rawstring for exporter is taken from the redis_exporter documentation: https://github.com/oliver006/redis_exporter#authenticating-with-redis
		exporterUser: "-@all +@connection +memory -readonly +strlen +config|get +xinfo +pfcount -quit +zcard +type +xlen -readwrite -command +client -wait +scard +llen +hlen +get +eval +slowlog +cluster|info +cluster|slots +cluster|nodes -hello -echo +info +latency +scan -reset -auth -asking",

		replicationUser: strings.Join([]string{
			"-@all +psync +sync +replconf +ping", // the ACL rawstring for replication is taken from Valkey documentation: https://valkey.io/topics/acl/#acl-rules-for-sentinel-and-replicas; +sync is required for dual-channel replication
			"+cluster|syncslots",                 // required for atomic slot migration
			// Today, Atomic slot migration streams the snapshot as a command stream
			// (SELECT + type-specific write commands from the AOF-rewrite)
			"+select +@write ~* -flushall -flushdb -swapdb",
		}, " "),
	}
)

var (
	errUnknownSystemUser = errors.New("unknown system user")
	errMissingSystemUser = errors.New("missing system user")
)

func getInternalSecretName(clusterName string) string {
	return "internal-" + clusterName + "-acl"
}

func getDefaultSecretName(clusterName string) string {
	return clusterName + "-users"
}

func getSystemPasswordSecretName(clusterName string) string {
	return "internal-" + clusterName + "-system-passwords"
}

// operatorUserPasswordSecret returns a SecretKeySelector for the operator-managed
// "_operator" system user's password.
func operatorUserPasswordSecret(clusterName string) *corev1.SecretKeySelector {
	if clusterName == "" {
		// this can be empty only when valkeynode is created independently without ValkeyCluster CR
		return nil
	}
	return &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: getSystemPasswordSecretName(clusterName)},
		Key:                  operatorUser,
		Optional:             func(b bool) *bool { return &b }(true),
	}
}

func (r *ValkeyClusterReconciler) createSystemUsersAcl(ctx context.Context, cluster *valkeyiov1alpha1.ValkeyCluster) (string, error) {
	log := logf.FromContext(ctx)
	log.V(1).Info("getting system users secret: " + cluster.Name)
	var systemsAcls strings.Builder
	systemUserSecret := &corev1.Secret{}
	err := r.Get(ctx, types.NamespacedName{
		Namespace: cluster.Namespace,
		Name:      getSystemPasswordSecretName(cluster.Name),
	}, systemUserSecret)
	if err != nil {
		if !apierrors.IsNotFound(err) {
			log.Error(err, "failed to fetch system users secret")
			return "", err
		}
		systemUserSecret, err = r.upsertSystemUsersPasswordSecret(ctx, cluster)
		if err != nil {
			log.Error(err, "failed to create system user secret")
			return "", err
		}
	}

	err = validateSystemUserPasswordSecret(systemUserSecret.Data, cluster)
	if err != nil {
		if errors.Is(err, errMissingSystemUser) {
			systemUserSecret, err = r.upsertSystemUsersPasswordSecret(ctx, cluster)
			if err != nil {
				log.Error(err, "failed to update system user secret")
				return "", err
			}
		} else {
			// error is unknown system user, either by manual modification, or removal from between valkey-operator versions
			log.Error(err, "error validating system user secret")
		}
	}

	for _, user := range systemUsers {
		if user == exporterUser && !cluster.Spec.Exporter.Enabled {
			continue
		}
		passwordHash := fmt.Sprintf("%x", sha256.Sum256(systemUserSecret.Data[user]))
		userAcl := valkeyiov1alpha1.UserAclSpec{
			Name:    user,
			Enabled: true,
			RawAcl:  systemUsersAcls[user],
			PasswordSecret: valkeyiov1alpha1.PasswordSecretSpec{
				Name: systemUserSecret.Name,
				Keys: []string{user},
			},
		}
		fmt.Fprintf(&systemsAcls, "%s\n", buildUserAcl(userAcl, []string{passwordHash}))
	}

	return systemsAcls.String(), nil
}

func (r *ValkeyClusterReconciler) reconcileUsersAcl(ctx context.Context, cluster *valkeyiov1alpha1.ValkeyCluster) error {

	log := logf.FromContext(ctx)

	// Sort users for consistency in hash calculations
	slices.SortFunc(cluster.Spec.Users, func(a, b valkeyiov1alpha1.UserAclSpec) int {
		return strings.Compare(a.Name, b.Name)
	})

	// Process each user, generating a complete ACL string
	var usersAcls strings.Builder
	for _, user := range cluster.Spec.Users {

		// Get passwords from Secret
		passwords, err := fetchUserPasswords(ctx, user, r.APIReader, cluster.Name, cluster.Namespace)
		if err != nil {
			return fmt.Errorf("user %s: %w", user.Name, err)
		}

		// Build ACL string for this user with found password(s)
		acl := buildUserAcl(user, passwords)
		fmt.Fprintf(&usersAcls, "%s\n", acl)
	}
	// append system users ACL
	systemUsersAcl, err := r.createSystemUsersAcl(ctx, cluster)
	if err != nil {
		log.Error(err, "failed to generate system users ACL")
		return err
	}
	fmt.Fprintf(&usersAcls, "%s\n", systemUsersAcl)

	// Append the revision user last, so its password hash covers every
	// managed entry above. A node reports ACLApplied only once this user loads
	// with this exact hash, which confirms the running server holds the current
	// aclfile revision. Because the hash covers the whole managed ACL, a
	// permission-only edit (unchanged users and passwords) still changes this
	// user's hash and is detected. See aclRevisionUser and aclObservablyInSync.
	//
	// This is the only place the internal ACL Secret's aclfile is assembled,
	// and the revision user must be present in every version written here. Any
	// future code path that writes aclFilename without appending it would leave
	// a stale revision on disk: aclObservablyInSync would then never match, and
	// every node would report ACLApplied=False forever. Keep aclfile assembly in
	// this one function.
	revisionHash := fmt.Sprintf("%x", sha256.Sum256([]byte(usersAcls.String())))
	fmt.Fprintf(&usersAcls, "user %s off resetchannels -@all #%s\n", aclRevisionUser, revisionHash)
	usersAclsBytes := []byte(usersAcls.String())

	// update the internal ACL secret with the generated users ACLs
	err = r.upsertInternalAclSecret(ctx, cluster, usersAclsBytes)
	if err != nil {
		log.Error(err, "failed to reconcile users ACL")
		return err
	}
	// All is good; The internal secret will be auto-mounted in the deployment
	return nil
}

// Helper for repeated actions
func appendAcl(acl *strings.Builder, permissions []string, prefix string) {
	for _, permission := range permissions {
		fmt.Fprintf(acl, " %s%s", prefix, permission)
	}
}

// Builds a user ACL string
func buildUserAcl(user valkeyiov1alpha1.UserAclSpec, passwords []string) string {

	// Holds the ACL as we build it
	var acl strings.Builder

	// Initial acl
	fmt.Fprintf(&acl, "user %s ", user.Name)

	// Is the user enabled?
	if user.Enabled {
		acl.WriteString("on")
	} else {
		acl.WriteString("off")
	}

	// If resetpass flag is false, then add password(s)/nopass flag to the ACL
	if !user.ResetPass {
		// If enabled, append password(s), which should already be prefix-hashed
		if user.NoPassword {
			fmt.Fprintf(&acl, " nopass")
		} else {
			appendAcl(&acl, passwords, "#")
		}
	}

	// Add key restrictions
	appendAcl(&acl, user.Keys.ReadWrite, "~")
	appendAcl(&acl, user.Keys.ReadOnly, "%R~")
	appendAcl(&acl, user.Keys.WriteOnly, "%W~")

	// Add channel restrictions
	if len(user.Channels.Patterns) > 0 {
		acl.WriteString(" resetchannels")
		appendAcl(&acl, user.Channels.Patterns, "&")
	}

	// Build command ACLs
	appendAcl(&acl, user.Commands.Allow, "+")
	appendAcl(&acl, user.Commands.Deny, "-")

	// Append remaining/raw permissions
	fmt.Fprintf(&acl, " %s", user.RawAcl)

	return acl.String()
}

// Fetches a Secret, and looks for referenced passwords
func fetchUserPasswords(ctx context.Context, user valkeyiov1alpha1.UserAclSpec, apiClient client.Reader, clusterName, clusterNamespace string) ([]string, error) {

	log := logf.FromContext(ctx)

	// If this user have resetpass flag, doesn't have a password, or is disabled, return empty
	if user.NoPassword || !user.Enabled || user.ResetPass {
		return []string{}, nil
	}
	// Look for a Secret matching the user-provided name, or clusterName-users
	userSecretName := getDefaultSecretName(clusterName)
	if user.PasswordSecret.Name != "" {
		userSecretName = user.PasswordSecret.Name
	}

	// Query API for the referenced Secret
	userSecret := &corev1.Secret{}
	if err := apiClient.Get(ctx, types.NamespacedName{
		Name:      userSecretName,
		Namespace: clusterNamespace,
	}, userSecret); err != nil {
		if !apierrors.IsNotFound(err) {
			log.Error(err, "failed to fetch acl secret")
			return []string{}, err
		}
		log.V(1).Info("Users secret not found", "userSecretName", userSecretName, "user", user.Name)

		// The Secret was not found; And since NoPassword is false, then we cannot add this user
		return []string{}, fmt.Errorf("no password or reference found")
	}

	// Sort the password keys; default to username if no keys present
	passwordKeys := user.PasswordSecret.Keys
	slices.Sort(passwordKeys)
	if len(passwordKeys) == 0 {
		passwordKeys = []string{user.Name}
	}

	// Now that we have a secret, look for any reference keys. If empty, default to username
	passwords := []string{}
	for _, key := range passwordKeys {

		log.V(2).Info("looking for password", "user", user.Name, "secret", userSecretName, "key", key)

		// byte-string password
		password, exists := userSecret.Data[key]
		if !exists {
			log.Error(nil, "missing password key in secret", "user", user.Name, "secret", userSecretName, "key", key)
			return []string{}, fmt.Errorf("missing password key in secret")
		}

		// Test if the string in the Secret is a pre-hashed sha256 password
		if isPreHashedPassword(password) {
			passwords = append(passwords, string(password[1:]))
			continue
		}

		// Otherwise, we assume a plaintext password, and we hash it before appending
		hashedPassword := fmt.Sprintf("%x", sha256.Sum256(password))
		passwords = append(passwords, hashedPassword)
	}

	return passwords, nil
}

func fetchSystemUserPassword(ctx context.Context, username string, apiClient client.Client, clusterName, clusterNamespace string) (string, error) {
	systemSecret := &corev1.Secret{}
	err := apiClient.Get(ctx, types.NamespacedName{
		Namespace: clusterNamespace,
		Name:      getSystemPasswordSecretName(clusterName),
	}, systemSecret)
	if err != nil {
		return "", err
	}
	return string(systemSecret.Data[username]), nil
}

// Check if byte-string begins with # (byte 35) and is 65 total characters long.
// If so, we assume this is a pre-hashed sha256 password.
func isPreHashedPassword(password []byte) bool {
	return password[0] == 35 && len(password) == 65
}

// GeneratePassword creates a random (alphanumeric) n chars long password
func generatePassword(length int) ([]byte, error) {
	const letters = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	ret := make([]byte, length)
	for i := range length {
		num, err := rand.Int(rand.Reader, big.NewInt(int64(len(letters))))
		if err != nil {
			return nil, err
		}
		ret[i] = letters[num.Int64()]
	}
	return ret, nil
}

// validateSystemUserPasswordSecret verifies that the system user password secret
// contains exactly the expected system user entries. It rejects any unknown users
// and ensures all required system users are present.
func validateSystemUserPasswordSecret(data map[string][]byte, cluster *valkeyiov1alpha1.ValkeyCluster) error {
	// list of users need to exists in the secret (with _exporter being optional)
	u := make([]string, len(systemUsers))
	copy(u, systemUsers)
	for user := range data {
		i := slices.Index(u, user)
		if i != -1 {
			u = append(u[:i], u[i+1:]...)
		}
	}
	for _, user := range u {
		if user == exporterUser && !cluster.Spec.Exporter.Enabled {
			continue
		}
		return fmt.Errorf("%w: %s", errMissingSystemUser, user)
	}
	for user := range data {
		if !slices.Contains(systemUsers, user) {
			return fmt.Errorf("%w: %s", errUnknownSystemUser, user)
		}
	}
	return nil
}

func (r *ValkeyClusterReconciler) upsertSystemUsersPasswordSecret(ctx context.Context, cluster *valkeyiov1alpha1.ValkeyCluster) (*corev1.Secret, error) {
	log := logf.FromContext(ctx)
	var createSecret bool
	secretName := getSystemPasswordSecretName(cluster.Name)
	systemUsersSecret := &corev1.Secret{}

	if err := r.Get(ctx, types.NamespacedName{
		Name:      secretName,
		Namespace: cluster.Namespace,
	}, systemUsersSecret); err != nil {
		if !apierrors.IsNotFound(err) {
			log.Error(err, "failed to fetch system users secret")
			return nil, err
		}
		log.V(2).Info("creating internal secret", "secretName", secretName)

		systemUsersSecret.Type = AclSecretType
		systemUsersSecret.ObjectMeta = metav1.ObjectMeta{
			Name:      secretName,
			Namespace: cluster.Namespace,
			Labels:    labels(cluster),
		}
		systemUsersSecret.Data = make(map[string][]byte)
		// Register ownership of the new internal Secret
		if err := controllerutil.SetControllerReference(cluster, systemUsersSecret, r.Scheme); err != nil {
			log.Error(err, "Failed to grab ownership of system users secret")
			r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, "InternalSecretsCreationFailed", "ReconcileUsers", "Failed to grab ownership of system users secret: %v", err)
			return systemUsersSecret, err
		}
		createSecret = true
	}

	for _, user := range systemUsers {
		if _, alreadyExist := systemUsersSecret.Data[user]; alreadyExist {
			continue
		}
		if user == exporterUser && !cluster.Spec.Exporter.Enabled {
			continue
		}
		password, err := generatePassword(passwordLength)
		if err != nil {
			log.Error(err, "Failed to generate random password", "username", user)
			r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, "InternalSecretsCreationFailed", "ReconcileUsers", "Failed to generate random password: %v", err)
			return systemUsersSecret, err
		}
		systemUsersSecret.Data[user] = password
	}

	var err error
	if createSecret {
		err = r.Create(ctx, systemUsersSecret)
	} else {
		err = r.Update(ctx, systemUsersSecret)
	}
	return systemUsersSecret, err
}

func (r *ValkeyClusterReconciler) upsertInternalAclSecret(ctx context.Context, cluster *valkeyiov1alpha1.ValkeyCluster, aclBytes []byte) error {
	log := logf.FromContext(ctx)
	aclHash := fmt.Sprintf("%x", sha256.Sum256(aclBytes))
	// An "internal" secrets object is used for synchronization
	internalSecretName := getInternalSecretName(cluster.Name)
	internalAclSecret := &corev1.Secret{}
	if err := r.Get(ctx, types.NamespacedName{
		Name:      internalSecretName,
		Namespace: cluster.Namespace,
	}, internalAclSecret); err != nil {
		if !apierrors.IsNotFound(err) {
			log.Error(err, "failed to fetch internal acl secret")
			return err
		}

		// Internal secret was not found.
		// Init, and add metadata to the new Secret object
		log.V(2).Info("creating internal secret", "secretName", internalSecretName)

		internalAclSecret.ObjectMeta = metav1.ObjectMeta{
			Name:      internalSecretName,
			Namespace: cluster.Namespace,
			Labels:    labels(cluster),
			Annotations: map[string]string{
				hashAnnotationKey: aclHash,
			},
		}
		internalAclSecret.Data = map[string][]byte{
			aclFilename: aclBytes,
		}
		internalAclSecret.Type = AclSecretType

		// Register ownership of the new internal Secret
		if err := controllerutil.SetControllerReference(cluster, internalAclSecret, r.Scheme); err != nil {
			log.Error(err, "Failed to grab ownership of internal secret")
			r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, "InternalSecretsCreationFailed", "ReconcileUsers", "Failed to grab ownership of internal secret: %v", err)
			return err
		}

		// Create the internal Secret
		if err := r.Create(ctx, internalAclSecret); err != nil {
			log.Error(err, "Failed to create internal secret")
			r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, "InternalSecretsCreationFailed", "ReconcileUsers", "Failed to create internal secret: %v", err)
			return err
		}

		r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, "InternalSecretsCreated", "ReconcileUsers", "Created internal ACLs")
		return nil
	}
	// All good; new internal Secret with contents created

	// Calculate, and compare the hashes to
	// determine if anything needs updating. If the hashes are the
	// same, don't update as that would cause infinite reconciliation

	if !upsertAnnotation(internalAclSecret, hashAnnotationKey, aclHash) {
		log.V(1).Info("internal ACLs unchanged")
		return nil
	}
	// Hashes are different; Update the acl contents of the internal secret
	internalAclSecret.Data[aclFilename] = aclBytes

	// Update secret
	if err := r.Update(ctx, internalAclSecret); err != nil {
		log.Error(err, "Failed to update internal secret")
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, "InternalSecretsUpdateFailed", "ReconcileUsers", "Failed to update internal secret: %v", err)
		return err
	}

	r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, "InternalSecretsUpdated", "ReconcileUsers", "Synchronized internal ACLs")
	return nil
}
