package framework

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/images"
)

// S3 server of a feature: versitygw from the image `make images` builds (images.S3Ref),
// serving the bucket S3Bucket from an emptyDir, behind the Service s3. A toolbox
// container in the same pod ("files") sees the objects as files under S3DataDir, so a
// test can corrupt or remove one.
const (
	S3Bucket         = "backups"
	S3AccessKey      = "e2e-access-key"
	S3SecretKey      = "e2e-secret-key-0123456789"
	S3CredsSecret    = "s3-creds"
	S3CASecret       = "s3-ca"
	S3DataDir        = "/data/objects"
	s3ServerTLS      = "s3-server-tls"
	s3Port           = 7070
	s3FilesContainer = "files"
)

// S3 is a running S3 server.
type S3 struct {
	Namespace string
	// Endpoint is the URL the operator and its Jobs use (the Service's DNS name).
	Endpoint string
	// TLS: the endpoint is HTTPS with a certificate of a test CA, in S3CASecret (ca.crt).
	TLS bool
	// Pod is the server's pod name.
	Pod string
}

// Store returns the object store description of the feature's S3 server.
func (s *S3) Store(prefix string) v1alpha1.ObjectStoreSpec {
	o := v1alpha1.ObjectStoreSpec{Prefix: prefix, S3: &v1alpha1.S3Spec{
		Bucket: S3Bucket, Endpoint: s.Endpoint, ForcePathStyle: true,
		Credentials: v1alpha1.S3Credentials{SecretName: S3CredsSecret},
	}}
	if s.TLS {
		o.S3.CABundle = &v1alpha1.SecretKeySelector{SecretName: S3CASecret}
	}
	return o
}

// DeployS3 starts the S3 server in ns and waits until it answers; with withTLS it
// serves HTTPS with a certificate for its Service names, signed by a fresh CA.
func (k *Cluster) DeployS3(ctx context.Context, t testing.TB, ns string, withTLS bool) *S3 {
	t.Helper()
	img, err := k.ComponentImage(images.ComponentS3)
	if err != nil {
		t.Fatalf("the S3 server image: %v (make deps installs versitygw, make images builds the image)", err)
	}
	toolbox, err := k.ComponentImage(images.ComponentToolbox)
	if err != nil {
		t.Fatal(err)
	}
	s := &S3{Namespace: ns, Pod: "s3", TLS: withTLS, Endpoint: fmt.Sprintf("http://s3.%s.svc:%d", ns, s3Port)}
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: S3CredsSecret, Namespace: ns},
		StringData: map[string]string{v1alpha1.DefaultAccessKeyIDKey: S3AccessKey, v1alpha1.DefaultSecretAccessKeyKey: S3SecretKey}}
	if err := k.Client.Create(ctx, creds); err != nil {
		t.Fatal(err)
	}
	args := []string{"--access", S3AccessKey, "--secret", S3SecretKey, "--port", fmt.Sprintf(":%d", s3Port), "--quiet"}
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	if withTLS {
		s.Endpoint = fmt.Sprintf("https://s3.%s.svc:%d", ns, s3Port)
		caPEM, certPEM, keyPEM := TestCertificate(t, []string{"s3", "s3." + ns, "s3." + ns + ".svc", "s3." + ns + ".svc.cluster.local"})
		for _, sec := range []*corev1.Secret{
			{ObjectMeta: metav1.ObjectMeta{Name: S3CASecret, Namespace: ns}, Data: map[string][]byte{"ca.crt": caPEM}},
			{ObjectMeta: metav1.ObjectMeta{Name: s3ServerTLS, Namespace: ns}, Data: map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM}},
		} {
			if err := k.Client.Create(ctx, sec); err != nil {
				t.Fatal(err)
			}
		}
		args = append(args, "--cert", "/tls/tls.crt", "--key", "/tls/tls.key")
		volumes = append(volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s3ServerTLS}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "tls", MountPath: "/tls", ReadOnly: true})
	}
	args = append(args, "posix", "--sidecar", "/data/meta", S3DataDir)
	data := corev1.VolumeMount{Name: "data", MountPath: "/data"}
	volumes = append(volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	labels := map[string]string{"app.kubernetes.io/name": "s3"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.Pod, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532), FSGroup: ptr.To[int64](65532)},
			InitContainers: []corev1.Container{{Name: "mkdir", Image: toolbox.Ref, Command: []string{"mkdir", "-p", S3DataDir + "/" + S3Bucket, "/data/meta"},
				VolumeMounts: []corev1.VolumeMount{data}}},
			Containers: []corev1.Container{
				{Name: "s3", Image: img.Ref, Args: args, VolumeMounts: append([]corev1.VolumeMount{data}, mounts...),
					Ports: []corev1.ContainerPort{{Name: "s3", ContainerPort: s3Port}}},
				{Name: s3FilesContainer, Image: toolbox.Ref, VolumeMounts: []corev1.VolumeMount{data}},
			},
			Volumes:                       volumes,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
		},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "s3", Namespace: ns},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "s3", Port: s3Port, TargetPort: intstr.FromInt32(s3Port)}}},
	}
	if err := k.Client.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	if err := k.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := WaitFor(ctx, k.Client, pod, 60*time.Second, "the S3 server to run", PodReady); err != nil {
		t.Fatal(err)
	}
	return s
}

// Objects lists the object keys of the bucket (from the files the server keeps).
func (s *S3) Objects(ctx context.Context, t testing.TB, k *Cluster) []string {
	t.Helper()
	out, err := k.Exec(ctx, s.Namespace, s.Pod, s3FilesContainer, "find", S3DataDir+"/"+S3Bucket, "-type", "f")
	if err != nil {
		t.Fatalf("list the objects: %v: %s", err, out)
	}
	var keys []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l = strings.TrimPrefix(l, S3DataDir+"/"+S3Bucket+"/"); l != "" {
			keys = append(keys, l)
		}
	}
	return keys
}

// Corrupt flips one byte of an object in place (its size stays the same).
func (s *S3) Corrupt(ctx context.Context, t testing.TB, k *Cluster, key string) {
	t.Helper()
	script := fmt.Sprintf("printf 'X' | dd of=%s/%s/%s bs=1 seek=64 count=1 conv=notrunc", S3DataDir, S3Bucket, key)
	if out, err := k.Exec(ctx, s.Namespace, s.Pod, s3FilesContainer, "sh", "-c", script); err != nil {
		t.Fatalf("corrupt %s: %v: %s", key, err, out)
	}
}

// Edit runs sed -i expr on an object in place (a manifest, to stand for another
// writer's).
func (s *S3) Edit(ctx context.Context, t testing.TB, k *Cluster, key, expr string) {
	t.Helper()
	if out, err := k.Exec(ctx, s.Namespace, s.Pod, s3FilesContainer, "sed", "-i", expr, S3DataDir+"/"+S3Bucket+"/"+key); err != nil {
		t.Fatalf("edit %s: %v: %s", key, err, out)
	}
}

// TestCertificate makes a CA and a certificate for names allowing server and client
// authentication (what Valkey members need), valid for a day.
func TestCertificate(t testing.TB, names []string) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "e2e S3 CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano() + 1), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), DNSNames: names,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// CreateValkeyCertSecret creates a kubernetes.io/tls Secret for the members of cluster
// in ns, signed by a fresh CA, and returns the CA's PEM.
func (k *Cluster) CreateValkeyCertSecret(ctx context.Context, t testing.TB, ns, secret, cluster string) []byte {
	t.Helper()
	caPEM, certPEM, keyPEM := TestCertificate(t, []string{cluster + "." + ns + ".svc", cluster + "." + ns + ".svc.cluster.local"})
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"ca.crt": caPEM, "tls.crt": certPEM, "tls.key": keyPEM}}
	if err := k.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	return caPEM
}
