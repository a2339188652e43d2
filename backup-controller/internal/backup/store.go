package backup

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/jobapi"
)

// storeError is a store problem with the condition reason it reports.
type storeError struct {
	reason string
	err    error
}

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// checkCredentials checks that the Secrets a store Job will take its credentials (and
// CA bundle) from exist with their keys, so that a missing one fails at once
// (CredentialsMissing) instead of leaving a Job's pod unable to start. The Secrets are
// read from the API server, never cached, and their values are not kept: the
// controller holds no user Secret in memory and never uses the credentials itself.
func checkCredentials(ctx context.Context, r client.Reader, namespace string, o *v1alpha1.ObjectStoreSpec) error {
	s3 := o.S3
	creds, err := readSecret(ctx, r, namespace, s3.Credentials.SecretName)
	if err != nil {
		return err
	}
	if len(creds.Data[s3.Credentials.AccessKeyID()]) == 0 || len(creds.Data[s3.Credentials.SecretAccessKey()]) == 0 {
		return &storeError{v1alpha1.ReasonCredentialsMissed, fmt.Errorf("the Secret %s lacks the key %s or %s",
			s3.Credentials.SecretName, s3.Credentials.AccessKeyID(), s3.Credentials.SecretAccessKey())}
	}
	if s3.CABundle != nil {
		ca, err := readSecret(ctx, r, namespace, s3.CABundle.SecretName)
		if err != nil {
			return err
		}
		if len(ca.Data[s3.CABundle.KeyOrDefault()]) == 0 {
			return &storeError{v1alpha1.ReasonCredentialsMissed, fmt.Errorf("the Secret %s lacks the CA bundle key %s", s3.CABundle.SecretName, s3.CABundle.KeyOrDefault())}
		}
	}
	return nil
}

func readSecret(ctx context.Context, r client.Reader, namespace, name string) (*corev1.Secret, error) {
	var s corev1.Secret
	err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &s)
	if apierrors.IsNotFound(err) {
		return nil, &storeError{v1alpha1.ReasonCredentialsMissed, fmt.Errorf("the Secret %s does not exist", name)}
	}
	if err != nil {
		return nil, fmt.Errorf("read Secret %s: %w", name, err)
	}
	return &s, nil
}

// Mount points of a Job's files.
const (
	mountPassword = "/var/run/valkey/user"
	mountTLS      = "/var/run/valkey/tls"
	mountCABundle = "/var/run/valkey/store-ca"
	mountData     = "/data"
	passwordFile  = mountPassword + "/password"
	tlsCAFile     = mountTLS + "/ca.crt"
	caBundleFile  = mountCABundle + "/ca.crt"
)

// storeArgs are the store flags of a Job's program: where the store is, and the
// operator's endpoint policy, which the Job applies to every address it connects to.
func storeArgs(s JobSettings, o *v1alpha1.ObjectStoreSpec) []string {
	s3 := o.S3
	args := []string{"--bucket=" + s3.Bucket, "--region=" + s3.RegionOrDefault()}
	if s3.Endpoint != "" {
		args = append(args, "--endpoint="+s3.Endpoint)
	}
	if s3.ForcePathStyle {
		args = append(args, "--path-style")
	}
	if s3.CABundle != nil {
		args = append(args, "--ca-bundle-file="+caBundleFile)
	}
	return append(args, s.StorePolicy.Args()...)
}

// The fields an object store's endpoint is written in, which the message of a
// connection the endpoint policy refused names.
const (
	backupEndpointField     = "spec.objectStore.s3.endpoint"
	dataSourceEndpointField = "spec.dataSource.objectStore.s3.endpoint"
)

// endpointRefused is the message of a store step the endpoint policy refused (a Job's
// Result with EndpointRefused): the field the endpoint is written in (where) and its
// value, then what the step says, which names the address and the rule.
func endpointRefused(where string, o *v1alpha1.ObjectStoreSpec, message string) string {
	endpoint := fmt.Sprintf("%q", o.S3.Endpoint)
	if o.S3.Endpoint == "" {
		endpoint = "(empty: AWS S3 of " + o.S3.RegionOrDefault() + ")"
	}
	return fmt.Sprintf("%s %s: %s", where, endpoint, message)
}

// storeEnv passes the store's credentials to a Job from the user's Secret.
func storeEnv(o *v1alpha1.ObjectStoreSpec) []corev1.EnvVar {
	c := o.S3.Credentials
	ref := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: c.SecretName}, Key: key}}
	}
	return []corev1.EnvVar{
		{Name: jobapi.EnvAccessKeyID, ValueFrom: ref(c.AccessKeyID())},
		{Name: jobapi.EnvSecretAccessKey, ValueFrom: ref(c.SecretAccessKey())},
	}
}

// storeVolumes mount the CA bundle of the store, when it has one.
func storeVolumes(o *v1alpha1.ObjectStoreSpec) ([]corev1.Volume, []corev1.VolumeMount) {
	if o.S3.CABundle == nil {
		return nil, nil
	}
	return []corev1.Volume{secretKeyVolume("store-ca", o.S3.CABundle.SecretName, o.S3.CABundle.KeyOrDefault(), "ca.crt")},
		[]corev1.VolumeMount{{Name: "store-ca", MountPath: mountCABundle, ReadOnly: true}}
}

// secretKeyVolume mounts one key of a Secret as one file: the Job sees nothing else
// of the Secret.
func secretKeyVolume(name, secret, key, path string) corev1.Volume {
	mode := int32(0o440)
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, Items: []corev1.KeyToPath{{Key: key, Path: path}}, DefaultMode: &mode,
	}}}
}
