package localkube

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/images"
)

// The NetworkPolicy engine is kube-network-policies (NetpolVersion), run as upstream
// runs it: a privileged hostNetwork DaemonSet in kube-system, one agent per node in the
// node's network namespace. Each agent reads the policies, namespaces and pods, and
// decides in user space on the first packet of every connection that the kernel queues
// to it (NFQUEUE); later packets pass on conntrack.
//
// One difference: the agent installs its queue rule with nftables' queue expression,
// which this machine's kernel lacks (CONFIG_NFT_QUEUE is not set: "nft add rule ...
// queue" fails with "No such file or directory"), and it ignores that failure. So the
// node runner installs the same rule itself with the xtables NFQUEUE target, which the
// kernel has (iptables, mangle POSTROUTING: after kube-proxy's DNAT, so the destination
// is the pod). It queues every new connection from or to the pod network, where the
// agent would queue only those of pods some policy selects; the agent accepts the
// others. --queue-bypass lets traffic through while no agent listens (before the
// DaemonSet's pod runs on the node), as upstream's fail-open.
const (
	netpolName      = "kube-network-policies"
	netpolNamespace = "kube-system"
	netpolQueue     = 100
	netpolChain     = "LOCALKUBE-NETPOL"
)

// netpolQueueRules are the iptables commands (arguments after "iptables -w") that queue
// the first packet of each connection to the agent, in the node's network namespace.
// They follow the agent's own nftables chain: DNS, the node's root processes (kubelet's
// probes) and established connections pass without it.
func netpolQueueRules() [][]string {
	q := []string{"-j", "NFQUEUE", "--queue-num", strconv.Itoa(netpolQueue), "--queue-bypass"}
	chain := []string{"-t", "mangle", "-A", netpolChain}
	rules := [][]string{
		{"-t", "mangle", "-N", netpolChain},
		append(append([]string{}, chain...), "-p", "udp", "--dport", "53", "-j", "RETURN"),
		append(append([]string{}, chain...), "-m", "owner", "--uid-owner", "0", "-j", "RETURN"),
		append(append([]string{}, chain...), "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN"),
		append(append(append([]string{}, chain...), "-s", PodCIDR), q...),
		append(append(append([]string{}, chain...), "-d", PodCIDR), q...),
		{"-t", "mangle", "-A", "POSTROUTING", "-j", netpolChain},
	}
	return rules
}

// installNetpolQueue runs netpolQueueRules in the calling process's network namespace
// (the node runner's: the node's).
func installNetpolQueue(ctx context.Context) error {
	for _, r := range netpolQueueRules() {
		if _, err := run(ctx, "iptables", append([]string{"-w"}, r...)...); err != nil {
			return fmt.Errorf("NetworkPolicy queue rule: %w", err)
		}
	}
	return nil
}

// netpolObjects are the engine's ServiceAccount, ClusterRole (upstream's install.yaml:
// list and watch pods, namespaces and NetworkPolicies), ClusterRoleBinding and DaemonSet.
func netpolObjects() (*corev1.ServiceAccount, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *appsv1.DaemonSet) {
	meta := metav1.ObjectMeta{Name: netpolName, Namespace: netpolNamespace, Labels: map[string]string{"app": netpolName}}
	sa := &corev1.ServiceAccount{ObjectMeta: meta}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: netpolName}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "namespaces"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"list", "watch"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: netpolName},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: netpolName},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: netpolName, Namespace: netpolNamespace}}}
	labels := map[string]string{"app": netpolName}
	ds := &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{
				HostNetwork:                   true,
				ServiceAccountName:            netpolName,
				Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				PriorityClassName:             "system-node-critical",
				TerminationGracePeriodSeconds: ptr.To[int64](2),
				Containers: []corev1.Container{{
					Name:  netpolName,
					Image: images.NetpolRef,
					// The image is imported into every node's containerd; there is no registry.
					ImagePullPolicy: corev1.PullNever,
					Args: []string{
						"--hostname-override=$(NODE_NAME)",
						"--nfqueue-id=" + strconv.Itoa(netpolQueue),
						// NRI is off in the nodes' containerd; the agent finds pods by IP
						// from its informer.
						"--disable-nri",
						// The DNS race it works around is fixed in kernels 6.12 and later.
						"--netfilter-bug-1766-fix=false",
						"--metrics-bind-address=127.0.0.1:9080",
						"--v=1",
					},
					Env: []corev1.EnvVar{
						{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
						// The API server directly, not through the kubernetes Service: the
						// agent starts before kube-proxy may have programmed the node.
						{Name: "KUBERNETES_SERVICE_HOST", Value: BridgeIP},
						{Name: "KUBERNETES_SERVICE_PORT", Value: strconv.Itoa(APIServerPort)},
					},
					SecurityContext: &corev1.SecurityContext{
						Privileged:   ptr.To(true),
						Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}},
					},
				}},
			},
		},
	}}
	return sa, role, binding, ds
}

// ensureNetpol creates the engine's objects (a fresh cluster has none of them).
func ensureNetpol(ctx context.Context, cs kubernetes.Interface) error {
	sa, role, binding, ds := netpolObjects()
	create := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s: %w", what, err)
		}
		return nil
	}
	if err := create("ServiceAccount", func() error {
		_, err := cs.CoreV1().ServiceAccounts(netpolNamespace).Create(ctx, sa, metav1.CreateOptions{})
		return err
	}()); err != nil {
		return err
	}
	if err := create("ClusterRole", func() error {
		_, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
		return err
	}()); err != nil {
		return err
	}
	if err := create("ClusterRoleBinding", func() error {
		_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
		return err
	}()); err != nil {
		return err
	}
	return create("DaemonSet", func() error {
		_, err := cs.AppsV1().DaemonSets(netpolNamespace).Create(ctx, ds, metav1.CreateOptions{})
		return err
	}())
}

// netpolReady reports whether the engine's agent runs and is ready on want nodes.
func netpolReady(ctx context.Context, cs kubernetes.Interface, want int) (bool, error) {
	ds, err := cs.AppsV1().DaemonSets(netpolNamespace).Get(ctx, netpolName, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	st := ds.Status
	if int(st.NumberReady) != want || int(st.DesiredNumberScheduled) != want {
		return false, fmt.Errorf("%d of %d agents ready (%d nodes)", st.NumberReady, st.DesiredNumberScheduled, want)
	}
	return true, nil
}

// enforcesNetworkPolicy says whether this cluster runs the engine: it is not turned off
// and its image was built.
func (c Config) enforcesNetworkPolicy() bool { return !c.NoNetworkPolicy && c.netpolImage() }

// startNetpol creates the engine's DaemonSet when the cluster enforces NetworkPolicy.
func (c Config) startNetpol(ctx context.Context) error {
	if !c.enforcesNetworkPolicy() {
		c.Log("NetworkPolicy is not enforced (LOCALKUBE_NETWORK_POLICY=off, or no kube-network-policies image: make local-build images)")
		return nil
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return ensureNetpol(ctx, cs)
}

// netpolImage reports whether the image manifest has the engine's image (localkube
// build made its binary before the images were built).
func (c Config) netpolImage() bool {
	m, err := images.ReadManifest(c.CacheDir)
	if err != nil {
		return false
	}
	for _, img := range m.Images {
		if img.Component == images.ComponentNetpol {
			return true
		}
	}
	return false
}
