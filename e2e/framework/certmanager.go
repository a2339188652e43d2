package framework

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/valkey-operator/valkey-operator/images"
	"github.com/valkey-operator/valkey-operator/localkube"
)

// CertManagerNamespace holds cert-manager's components and their Leases; the Secrets of
// ClusterIssuers and of the webhook's serving CA are there too.
const CertManagerNamespace = "cert-manager"

// The webhook's names and ports, as cert-manager's chart has them: its Service (443 to
// the pod's https port), the Secret of the CA that signs its serving certificates (the
// webhook creates and renews both; the cainjector copies the CA into the webhook
// configurations), and its /healthz and /livez.
const (
	certManagerWebhook         = "cert-manager-webhook"
	certManagerWebhookCASecret = "cert-manager-webhook-ca"
	certManagerWebhookPort     = 10250
	certManagerWebhookHealthz  = 6080
)

// certManagerComponent is one of cert-manager's components as the suites run it: the
// command of the program localkube build --certmanager makes and its flags in a pod, its
// ServiceAccount and Deployment (both named cert-manager-<command>), the Lease it holds
// ("" for the webhook, which runs unelected), what it may do in every namespace (rules)
// and, besides its Lease, in CertManagerNamespace (roleRules), the ports its pod serves
// and its probes.
type certManagerComponent struct {
	command   string
	flags     []string
	lease     string
	rules     []rbacv1.PolicyRule
	roleRules []rbacv1.PolicyRule
	ports     []corev1.ContainerPort
	liveness  *corev1.Probe
	readiness *corev1.Probe
}

func (c certManagerComponent) name() string { return "cert-manager-" + c.command }

// httpProbe is a probe of path on the pod's port named port.
func httpProbe(path, port string, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(port)}},
		PeriodSeconds: period, TimeoutSeconds: 15, FailureThreshold: failures,
	}
}

// certManagerComponents are the controller, the cainjector and the webhook. Their rules
// are the ones cert-manager's chart gives the controllers they run, without those of the
// controllers they leave out (ACME, the shims), and the cainjector's injection into
// webhook configurations only; TestCertManagerRBAC proves them sufficient, the webhook's
// approval check included.
var certManagerComponents = []certManagerComponent{
	{
		command: "controller", lease: "cert-manager-controller",
		flags: []string{"--namespace=" + CertManagerNamespace, "--v=2", "--healthz-address=:9403"},
		rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"cert-manager.io"}, Resources: []string{"issuers", "clusterissuers", "certificates", "certificaterequests"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"cert-manager.io"}, Resources: []string{"issuers/status", "clusterissuers/status", "certificates/status", "certificaterequests/status"}, Verbs: []string{"update", "patch"}},
			// The request manager creates a Certificate's requests, the revision manager
			// deletes the old ones.
			{APIGroups: []string{"cert-manager.io"}, Resources: []string{"certificaterequests"}, Verbs: []string{"create", "delete"}},
			// The approver approves the requests of cert-manager's own issuers; the
			// webhook lets only who may approve a signer set the Approved condition.
			{APIGroups: []string{"cert-manager.io"}, Resources: []string{"signers"}, Verbs: []string{"approve"},
				ResourceNames: []string{"issuers.cert-manager.io/*", "clusterissuers.cert-manager.io/*"}},
			// Requests and next private keys are owned by their Certificate with
			// blockOwnerDeletion (OwnerReferencesPermissionEnforcement, on in the local
			// Kubernetes, checks this).
			{APIGroups: []string{"cert-manager.io"}, Resources: []string{"certificates/finalizers"}, Verbs: []string{"update"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		},
		ports:    []corev1.ContainerPort{{Name: "http-healthz", ContainerPort: 9403}},
		liveness: httpProbe("/livez", "http-healthz", 10, 8),
	},
	{
		command: "cainjector", lease: "cert-manager-cainjector-leader-election",
		flags: []string{"--namespace=" + CertManagerNamespace, "--v=2"},
		rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"cert-manager.io"}, Resources: []string{"certificates"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}, Verbs: []string{"get", "list", "watch", "patch"}},
		},
		// The events of its leader election, on its Lease.
		roleRules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}}},
	},
	{
		command: "webhook",
		flags: []string{
			fmt.Sprintf("--secure-port=%d", certManagerWebhookPort),
			fmt.Sprintf("--healthz-port=%d", certManagerWebhookHealthz),
			"--dynamic-serving-ca-secret-namespace=" + CertManagerNamespace,
			"--dynamic-serving-ca-secret-name=" + certManagerWebhookCASecret,
			"--dynamic-serving-dns-names=" + strings.Join([]string{
				certManagerWebhook, certManagerWebhook + "." + CertManagerNamespace, certManagerWebhook + "." + CertManagerNamespace + ".svc",
			}, ","),
			"--metrics-listen-address=0", "--v=2",
		},
		// The approval check asks the API server who may approve a signer.
		rules: []rbacv1.PolicyRule{{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}}},
		// Its serving CA: one Secret it creates (create cannot be limited to a name) and
		// then reads and renews.
		roleRules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{certManagerWebhookCASecret}, Verbs: []string{"get", "list", "watch", "update"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
		},
		ports: []corev1.ContainerPort{
			{Name: "https", ContainerPort: certManagerWebhookPort},
			{Name: "healthcheck", ContainerPort: certManagerWebhookHealthz},
		},
		liveness:  httpProbe("/livez", "healthcheck", 10, 3),
		readiness: httpProbe("/healthz", "healthcheck", 5, 3),
	},
}

// certManagerRBAC are the components' ServiceAccounts, their ClusterRoles, and Roles in
// CertManagerNamespace for their Leases and roleRules, with the bindings.
func certManagerRBAC() []client.Object {
	var objs []client.Object
	for _, c := range certManagerComponents {
		name := c.name()
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + name}, Rules: c.rules}
		local := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: CertManagerNamespace}, Rules: c.roleRules}
		if c.lease != "" {
			local.Name = name + "-leader-election"
			local.Rules = append([]rbacv1.PolicyRule{
				{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, ResourceNames: []string{c.lease}, Verbs: []string{"get", "update", "patch"}},
				{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, Verbs: []string{"create"}},
			}, c.roleRules...)
		}
		objs = append(objs,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: CertManagerNamespace}},
			role, clusterRoleBinding(role.Name, role.Name, CertManagerNamespace, name),
			local, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: local.Name, Namespace: CertManagerNamespace},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: local.Name},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: CertManagerNamespace}},
			})
	}
	return objs
}

// args are the component's command line in its pod.
func (c certManagerComponent) args() []string {
	return append([]string{c.command}, c.flags...)
}

// deployment is the component's Deployment, running image under the restricted Pod
// Security Standard.
func (c certManagerComponent) deployment(image string) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": c.name()}
	container := corev1.Container{
		Name: c.command, Image: image, Args: c.args(), Ports: c.ports,
		LivenessProbe: c.liveness, ReadinessProbe: c.readiness,
		SecurityContext: restrictedContainer(),
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

// certManagerWebhookConfigurations are the webhook's mutating and validating
// configurations, as cert-manager's chart has them: every cert-manager.io and
// acme.cert-manager.io resource and subresource (the approval check is on
// certificaterequests/status), failing closed, the CA bundle injected by the cainjector
// from the webhook's serving CA. to says where the API server reaches the webhook, given
// the path (/mutate or /validate).
func certManagerWebhookConfigurations(to func(path string) admissionregistrationv1.WebhookClientConfig) []client.Object {
	annotations := map[string]string{"cert-manager.io/inject-ca-from-secret": CertManagerNamespace + "/" + certManagerWebhookCASecret}
	rule := func(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Operations: ops, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"cert-manager.io", "acme.cert-manager.io"}, APIVersions: []string{"v1"}, Resources: []string{"*/*"},
		}}}
	}
	const name = "webhook.cert-manager.io"
	versions := []string{"v1"}
	sideEffects := ptr.To(admissionregistrationv1.SideEffectClassNone)
	fail := ptr.To(admissionregistrationv1.Fail)
	equivalent := ptr.To(admissionregistrationv1.Equivalent)
	return []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: certManagerWebhook, Annotations: annotations},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: name, AdmissionReviewVersions: versions, SideEffects: sideEffects, FailurePolicy: fail, MatchPolicy: equivalent,
				TimeoutSeconds: ptr.To[int32](10), ClientConfig: to("/mutate"), Rules: rule(admissionregistrationv1.Create),
			}},
		},
		&admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: certManagerWebhook, Annotations: annotations},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: name, AdmissionReviewVersions: versions, SideEffects: sideEffects, FailurePolicy: fail, MatchPolicy: equivalent,
				TimeoutSeconds: ptr.To[int32](10), ClientConfig: to("/validate"), Rules: rule(admissionregistrationv1.Create, admissionregistrationv1.Update),
				NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: "cert-manager.io/disable-validation", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"true"},
				}}},
			}},
		},
	}
}

// certManagerWebhookService is the webhook's Service, which its configurations name.
func certManagerWebhookService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: certManagerWebhook, Namespace: CertManagerNamespace},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app.kubernetes.io/name": certManagerWebhook},
			Ports:    []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromString("https")}},
		},
	}
}

// InstallCertManager returns a Setup step that runs cert-manager's controller,
// cainjector and webhook (built by localkube build --certmanager, their image by make
// images) in CertManagerNamespace: its CRDs, a ServiceAccount and least-privilege roles
// per component, their Deployments, and the webhook's Service and configurations. It
// waits until the components run, hold their Leases, and the webhook admits a
// cert-manager resource (so its CA is injected and the API server reaches it). On a kept
// Kubernetes it makes an earlier install what this one says.
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
	objs = append(objs, certManagerWebhookService())
	objs = append(objs, certManagerWebhookConfigurations(func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: CertManagerNamespace, Name: certManagerWebhook, Path: ptr.To(path),
		}}
	})...)
	for _, o := range objs {
		if err := applyObject(ctx, k.Client, o); err != nil {
			return err
		}
	}
	for _, c := range certManagerComponents {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: c.name(), Namespace: CertManagerNamespace}}
		if err := WaitFor(ctx, k.Client, d, 2*time.Minute, "run", func(d *appsv1.Deployment) (bool, string) {
			s := d.Status
			done := s.ObservedGeneration == d.Generation && s.UpdatedReplicas == 1 && s.AvailableReplicas == 1 && s.Replicas == 1
			return done, fmt.Sprintf("%d updated, %d available of %d", s.UpdatedReplicas, s.AvailableReplicas, s.Replicas)
		}); err != nil {
			return err
		}
		if c.lease == "" {
			continue
		}
		if err := waitLeaseHeld(ctx, k.Client, c.lease, 2*time.Minute); err != nil {
			return err
		}
	}
	return waitCertManagerWebhook(ctx, k.Client, 2*time.Minute)
}

// waitCertManagerWebhook waits until cert-manager's webhook admits a cert-manager
// resource: a dry-run create of a self-signed Issuer passes both its configurations
// (the API server reaches it and trusts its certificate).
func waitCertManagerWebhook(ctx context.Context, c client.Client, timeout time.Duration) error {
	return Until(ctx, timeout, "cert-manager's webhook to admit an Issuer", func(ctx context.Context) (bool, string, error) {
		issuer := CertManagerObject("Issuer", CertManagerNamespace, "e2e-webhook-check")
		issuer.Object["spec"] = map[string]any{"selfSigned": map[string]any{}}
		if err := c.Create(ctx, issuer, client.DryRunAll); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
}

// CertManagerWebhookRefusal creates, dry run, a Certificate in ns that cert-manager's
// CRD schema admits but that names nothing to certify, and returns the error: when
// cert-manager's webhook serves, it refuses it, saying which names are missing.
func CertManagerWebhookRefusal(ctx context.Context, c client.Client, ns string) error {
	bad := CertManagerObject("Certificate", ns, "e2e-nameless")
	bad.Object["spec"] = map[string]any{
		"secretName": "e2e-nameless",
		"issuerRef":  map[string]any{"name": "e2e", "kind": "Issuer", "group": "cert-manager.io"},
	}
	return c.Create(ctx, bad, client.DryRunAll)
}

// CertManagerWebhookRefused says whether err is cert-manager's webhook refusing
// CertManagerWebhookRefusal's Certificate.
func CertManagerWebhookRefused(err error) bool {
	return err != nil && strings.Contains(err.Error(), `admission webhook "webhook.cert-manager.io" denied the request`) &&
		strings.Contains(err.Error(), "dnsNames")
}

// applyObject makes o exist as it says, with server-side apply (the framework the field
// owner, taking fields over): created when missing, changed when an earlier run made it
// otherwise, so a kept Kubernetes runs what this framework installs now.
func applyObject(ctx context.Context, c client.Client, o client.Object) error {
	gvk, err := apiutil.GVKForObject(o, c.Scheme())
	if err != nil {
		return err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("valkey-operator-e2e"), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s: %w", gvk.Kind, o.GetName(), err)
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
