package framework

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/localkube"
	"github.com/valkey-operator/valkey-operator/localkube/images"
)

// CertManagerNamespace holds cert-manager's two components and their Leases; the
// Secrets of ClusterIssuers are read there too.
const CertManagerNamespace = "cert-manager"

// certManagerComponent is one of cert-manager's components as the suites run it: the
// command of the program localkube build --certmanager makes, its ServiceAccount and
// Deployment (both named cert-manager-<command>), the Lease it holds, what it may do in
// every namespace (rules) and, besides its Lease, in CertManagerNamespace (roleRules).
type certManagerComponent struct {
	command   string
	lease     string
	rules     []rbacv1.PolicyRule
	roleRules []rbacv1.PolicyRule
	// healthz is the port of the controller's /livez; 0: none.
	healthz int32
}

func (c certManagerComponent) name() string { return "cert-manager-" + c.command }

// certManagerComponents are the controller and the cainjector (no webhook: its handlers
// are internal packages of cert-manager, hack/certmanager). Their rules are the ones
// cert-manager's chart gives the controllers they run, without those of the controllers
// they leave out (ACME, the shims, the approval check of the webhook), and the
// cainjector's injection into webhook configurations only; TestCertManagerRBAC proves
// them sufficient.
var certManagerComponents = []certManagerComponent{
	{
		command: "controller", lease: "cert-manager-controller", healthz: 9403,
		rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"cert-manager.io"}, Resources: []string{"issuers", "clusterissuers", "certificates", "certificaterequests"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"cert-manager.io"}, Resources: []string{"issuers/status", "clusterissuers/status", "certificates/status", "certificaterequests/status"}, Verbs: []string{"update", "patch"}},
			// The request manager creates a Certificate's requests, the revision manager
			// deletes the old ones.
			{APIGroups: []string{"cert-manager.io"}, Resources: []string{"certificaterequests"}, Verbs: []string{"create", "delete"}},
			// Requests and next private keys are owned by their Certificate with
			// blockOwnerDeletion (OwnerReferencesPermissionEnforcement, on in the local
			// Kubernetes, checks this).
			{APIGroups: []string{"cert-manager.io"}, Resources: []string{"certificates/finalizers"}, Verbs: []string{"update"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		},
	},
	{
		command: "cainjector", lease: "cert-manager-cainjector-leader-election",
		rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"cert-manager.io"}, Resources: []string{"certificates"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}, Verbs: []string{"get", "list", "watch", "patch"}},
		},
		// The events of its leader election, on its Lease.
		roleRules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}}},
	},
}

// certManagerRBAC are the components' ServiceAccounts, their ClusterRoles, and Roles for
// their Leases in CertManagerNamespace, with the bindings.
func certManagerRBAC() []client.Object {
	var objs []client.Object
	for _, c := range certManagerComponents {
		name := c.name()
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + name}, Rules: c.rules}
		lease := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name + "-leader-election", Namespace: CertManagerNamespace}, Rules: append([]rbacv1.PolicyRule{
			{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, ResourceNames: []string{c.lease}, Verbs: []string{"get", "update", "patch"}},
			{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		}, c.roleRules...)}
		objs = append(objs,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: CertManagerNamespace}},
			role, clusterRoleBinding(role.Name, role.Name, CertManagerNamespace, name),
			lease, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: lease.Name, Namespace: CertManagerNamespace},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: lease.Name},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: CertManagerNamespace}},
			})
	}
	return objs
}

// args are the component's command line in its pod.
func (c certManagerComponent) args() []string {
	return []string{c.command, "--namespace=" + CertManagerNamespace, "--v=2"}
}

// deployment is the component's Deployment, running image under the restricted Pod
// Security Standard.
func (c certManagerComponent) deployment(image string) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": c.name()}
	container := corev1.Container{
		Name: c.command, Image: image, Args: c.args(),
		SecurityContext: restrictedContainer(),
	}
	if c.healthz != 0 {
		container.Args = append(container.Args, fmt.Sprintf("--healthz-address=:%d", c.healthz))
		container.Ports = []corev1.ContainerPort{{Name: "http-healthz", ContainerPort: c.healthz}}
		container.LivenessProbe = &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/livez", Port: intstr.FromString("http-healthz")}},
			PeriodSeconds:    10,
			TimeoutSeconds:   15,
			FailureThreshold: 8,
		}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: c.name(), Namespace: CertManagerNamespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName:            c.name(),
					SecurityContext:               restrictedPod(65534),
					Containers:                    []corev1.Container{container},
					TerminationGracePeriodSeconds: ptr.To[int64](5),
				},
			},
		},
	}
}

// InstallCertManager returns a Setup step that runs cert-manager's controller and
// cainjector (built by localkube build --certmanager, their image by make images) in
// CertManagerNamespace: its CRDs, a ServiceAccount and least-privilege roles per
// component, and their Deployments, and waits until both run and hold their Leases.
// There is no webhook: the suites create complete, valid cert-manager resources.
func InstallCertManager() env.Func {
	return installStep("cert-manager", "cert-manager "+localkube.CertManagerVersion, (*Cluster).installCertManager)
}

func (k *Cluster) installCertManager(ctx context.Context) error {
	img, err := k.ComponentImage(images.ComponentCertManager)
	if err != nil {
		return fmt.Errorf("%w (make certmanager-build images)", err)
	}
	if err := k.applyCRDs(ctx, filepath.Join(k.Paths.localkubeConfig().CertManagerDir(), "crds"), "make certmanager-build"); err != nil {
		return err
	}
	objs := append([]client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: CertManagerNamespace}}}, certManagerRBAC()...)
	for _, c := range certManagerComponents {
		objs = append(objs, c.deployment(img.Ref))
	}
	for _, o := range objs {
		if err := createOrKeep(ctx, k.Client, o); err != nil {
			return err
		}
	}
	for _, c := range certManagerComponents {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: c.name(), Namespace: CertManagerNamespace}}
		if err := WaitFor(ctx, k.Client, d, 2*time.Minute, "run", func(d *appsv1.Deployment) (bool, string) {
			return d.Status.AvailableReplicas == 1, fmt.Sprintf("%d available", d.Status.AvailableReplicas)
		}); err != nil {
			return err
		}
		if err := waitLeaseHeld(ctx, k.Client, c.lease, 2*time.Minute); err != nil {
			return err
		}
	}
	return nil
}

// waitLeaseHeld waits until a cert-manager component holds its Lease: it then runs its
// controllers.
func waitLeaseHeld(ctx context.Context, c client.Client, name string, timeout time.Duration) error {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: CertManagerNamespace}}
	return WaitFor(ctx, c, lease, timeout, "be held", func(l *coordinationv1.Lease) (bool, string) {
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		return holder != "", "holder " + holder
	})
}

// CertManagerReady is WaitFor's condition for a cert-manager resource (Issuer,
// ClusterIssuer, Certificate, CertificateRequest): its Ready condition is True. The
// detail is the condition as a user reads it.
func CertManagerReady(u *unstructured.Unstructured) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		return m["status"] == "True", fmt.Sprintf("Ready=%v %v: %v", m["status"], m["reason"], m["message"])
	}
	return false, "no Ready condition"
}

// CertManagerObject is a cert-manager.io/v1 resource of kind with its name and
// namespace, for Get and WaitFor.
func CertManagerObject(kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("cert-manager.io/v1")
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// CreateCAIssuer makes name in ns an Issuer of certificates signed by a CA of its own: a
// self-signed Issuer <name>-selfsigned signs the CA Certificate <name>-ca (its key and
// certificate in the Secret <name>-ca), which the CA Issuer name signs with. It waits
// until the three are Ready and returns the CA's certificate (PEM), the ca.crt of every
// certificate the Issuer signs.
func (k *Cluster) CreateCAIssuer(ctx context.Context, ns, name string) ([]byte, error) {
	selfSigned := CertManagerObject("Issuer", ns, name+"-selfsigned")
	selfSigned.Object["spec"] = map[string]any{"selfSigned": map[string]any{}}
	ca := CertManagerObject("Certificate", ns, name+"-ca")
	ca.Object["spec"] = map[string]any{
		"isCA": true, "commonName": ns + "/" + name + " CA", "secretName": name + "-ca",
		"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256)},
		"issuerRef":  map[string]any{"name": selfSigned.GetName(), "kind": "Issuer", "group": "cert-manager.io"},
	}
	issuer := CertManagerObject("Issuer", ns, name)
	issuer.Object["spec"] = map[string]any{"ca": map[string]any{"secretName": name + "-ca"}}
	for _, o := range []*unstructured.Unstructured{selfSigned, ca, issuer} {
		if err := k.Client.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("create %s %s/%s: %w", o.GetKind(), ns, o.GetName(), err)
		}
		if err := WaitFor(ctx, k.Client, o, time.Minute, "be Ready", CertManagerReady); err != nil {
			return nil, err
		}
	}
	secret := &corev1.Secret{}
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-ca"}, secret); err != nil {
		return nil, fmt.Errorf("read the CA of %s/%s: %w", ns, name, err)
	}
	return secret.Data[corev1.TLSCertKey], nil
}
