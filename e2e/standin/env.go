package standin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/internal/envtestenv"
	"github.com/valkey-operator/valkey-operator/internal/operator"
)

// Options shape a stand-in Kubernetes.
type Options struct {
	// Dir holds everything the run writes: kubeconfigs, logs, the pods' files.
	Dir string
	// Octet is the second byte of the pods' addresses, 127.Octet.x.y.
	Octet int
	// Workers is how many pods the stand-in kubelet handles at once.
	Workers int
}

// Env is a Kubernetes made of a real API server and stand-ins for the rest: envtest's
// kube-apiserver and etcd with the operator's CRDs, the kube-controller-manager of the
// same build running the controllers a member's life needs (StatefulSet, Deployment and
// ReplicaSet, the garbage collector that deletes what owners leave, the namespace
// controller), one Node, and the Kubelet, which binds and runs the members' pods.
type Env struct {
	// Config and Client are an administrator's.
	Config  *rest.Config
	Client  client.Client
	Kubelet *Kubelet
	Dir     string

	env    *envtest.Environment
	kcm    *exec.Cmd
	kcmErr chan error
	cancel context.CancelFunc
	done   chan error
}

// kcmControllers are the kube-controller-manager's controllers the stand-in runs.
var kcmControllers = "statefulset-controller,deployment-controller,replicaset-controller,garbage-collector-controller,namespace-controller"

// Start starts the API server (once per test binary: envtestenv), the controller
// manager, the Node and the Kubelet.
func Start(ctx context.Context, o Options) (*Env, error) {
	env, err := envtestenv.Environment(envtestenv.Options{})
	if err != nil {
		return nil, err
	}
	c, err := client.New(env.Config, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		return nil, err
	}
	e := &Env{Config: env.Config, Client: c, Dir: o.Dir, env: env}
	if err := e.startKCM(); err != nil {
		return nil, err
	}
	if err := e.createNode(ctx); err != nil {
		e.Stop()
		return nil, err
	}
	if err := e.startKubelet(o); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

// Kubeconfig writes a kubeconfig for a user of the API server (certificate
// authentication: the name and groups are what RBAC and flow control see) and returns
// its path.
func (e *Env) Kubeconfig(name string, groups ...string) (string, error) {
	u, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return "", fmt.Errorf("add user %s: %w", name, err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		return "", err
	}
	// KUBECONFIG is a list separated by colons: none in the file's name.
	path := filepath.Join(e.Dir, "kubeconfig-"+strings.NewReplacer(":", "_", "/", "_").Replace(name)+".yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return "", err
	}
	if _, err := clientcmd.LoadFromFile(path); err != nil {
		return "", fmt.Errorf("kubeconfig of %s: %w", name, err)
	}
	return path, nil
}

// startKCM runs kube-controller-manager from the API server's directory of binaries.
func (e *Env) startKCM() error {
	assets, err := envtestenv.Assets("kube-controller-manager")
	if err != nil {
		return err
	}
	kc, err := e.Kubeconfig("system:kube-controller-manager", "system:masters")
	if err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(e.Dir, "kube-controller-manager.log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(assets, "kube-controller-manager"), "--kubeconfig="+kc, "--controllers="+kcmControllers,
		"--leader-elect=false", "--secure-port=0")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start kube-controller-manager: %w", err)
	}
	e.kcm, e.kcmErr = cmd, make(chan error, 1)
	go func() { e.kcmErr <- cmd.Wait(); logf.Close() }()
	return nil
}

// createNode makes the Node the Kubelet binds pods to, Ready.
func (e *Env) createNode(ctx context.Context) error {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName, Labels: map[string]string{corev1.LabelHostname: NodeName}}}
	if err := e.Client.Create(ctx, n); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("create node %s: %w", NodeName, err)
	}
	n.Status = corev1.NodeStatus{
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("100000")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("100000")},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
	}
	if err := e.Client.Status().Update(ctx, n); err != nil {
		return fmt.Errorf("report node %s: %w", NodeName, err)
	}
	return nil
}

// startKubelet runs the Kubelet in a manager of its own, as a user of its own.
func (e *Env) startKubelet(o Options) error {
	kc, err := e.Kubeconfig("system:node:"+NodeName, "system:masters")
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 200, 400
	members := labels.SelectorFromSet(labels.Set{v1alpha1.LabelName: v1alpha1.AppName})
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 operator.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 zap.New(zap.WriteTo(mustCreate(filepath.Join(e.Dir, "standin-kubelet.log")))),
		Cache:                  cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Label: members}}},
		Client:                 client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}}}},
	})
	if err != nil {
		return err
	}
	e.Kubelet = NewKubelet(mgr.GetClient(), filepath.Join(e.Dir, "kubelet"), o.Octet)
	if err := e.Kubelet.SetupWithManager(mgr, max(o.Workers, 1)); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan error, 1)
	go func() { e.done <- mgr.Start(ctx) }()
	return nil
}

// Stop stops the Kubelet (and every server), the controller manager and the API server.
func (e *Env) Stop() {
	if e.cancel != nil {
		e.cancel()
		select {
		case <-e.done:
		case <-time.After(30 * time.Second):
		}
		e.Kubelet.StopAll()
	}
	if e.kcm != nil {
		_ = e.kcm.Process.Signal(syscall.SIGTERM)
		select {
		case <-e.kcmErr:
		case <-time.After(10 * time.Second):
			_ = e.kcm.Process.Kill()
		}
	}
	envtestenv.Stop()
}

// ControllerManagerRunning reports an error when kube-controller-manager has exited.
func (e *Env) ControllerManagerRunning() error {
	select {
	case err := <-e.kcmErr:
		e.kcmErr <- err
		return errors.Join(errors.New("kube-controller-manager exited (see kube-controller-manager.log)"), err)
	default:
		return nil
	}
}

func mustCreate(path string) *os.File {
	f, err := os.Create(path)
	if err != nil {
		return os.Stderr
	}
	return f
}
