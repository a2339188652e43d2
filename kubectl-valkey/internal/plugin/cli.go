package plugin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// cliContainer is the container of the temporary pod.
const cliContainer = "valkey-cli"

// cliCommand runs valkey-cli as a named user in a temporary pod. The password reaches
// valkey-cli only through the pod's environment, from the user's Secret (secretKeyRef):
// the plugin never reads it, and it is in no argument of the pod.
func cliCommand(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
	user := fs.String("user", "", "the Valkey user to log in as (one of spec.users, or a system user such as _operator) (required)")
	image := fs.String("image", "", "image with valkey-cli (default: the cluster's image)")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long to wait for the pod to start (and, with a command, to finish)")
	return func(ctx context.Context, e *env, args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("name one ValkeyCluster")
		}
		name, command := args[0], args[1:]
		if *user == "" {
			return fmt.Errorf("--user is required")
		}
		vc, err := e.getCluster(ctx, name)
		if err != nil {
			return err
		}
		pod, err := cliPod(vc, *user, *image, command)
		if err != nil {
			return err
		}
		if err := e.c.Create(ctx, pod); err != nil {
			return fmt.Errorf("create the valkey-cli pod: %w", err)
		}
		defer func() {
			// The pod goes whatever happened (a cancelled context included).
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := e.c.Delete(dctx, pod, client.GracePeriodSeconds(0)); err != nil && !strings.Contains(err.Error(), "not found") {
				fmt.Fprintf(e.errw, "warning: delete pod %s: %v\n", pod.Name, err)
			}
		}()
		wctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		if len(command) > 0 {
			return e.runToCompletion(wctx, pod)
		}
		if err := e.waitPod(wctx, pod, func(p corev1.PodPhase) bool { return p == corev1.PodRunning }); err != nil {
			return err
		}
		kubectl := append(append([]string{}, e.kubectlArgs...), "attach", "-it", "-n", pod.Namespace, pod.Name, "-c", cliContainer)
		cmd := exec.CommandContext(ctx, "kubectl", kubectl...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, e.out, e.errw
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("kubectl attach: %w", err)
		}
		return nil
	}
}

// runToCompletion waits for a pod running one command to finish and copies its output.
func (e *env) runToCompletion(ctx context.Context, pod *corev1.Pod) error {
	if err := e.waitPod(ctx, pod, func(p corev1.PodPhase) bool {
		return p == corev1.PodSucceeded || p == corev1.PodFailed
	}); err != nil {
		return err
	}
	logs, err := e.logs(ctx, pod)
	if err != nil {
		return err
	}
	fmt.Fprint(e.out, logs)
	if pod.Status.Phase == corev1.PodFailed {
		return fmt.Errorf("valkey-cli failed")
	}
	return nil
}

// waitPod polls the pod until its phase satisfies ok.
func (e *env) waitPod(ctx context.Context, pod *corev1.Pod, ok func(corev1.PodPhase) bool) error {
	for {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err == nil && ok(pod.Status.Phase) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod %s: still %s: %w", pod.Name, pod.Status.Phase, ctx.Err())
		case <-time.After(e.poll / 2):
		}
	}
}

// passwordRef is where a user's password is: a key of a Secret (nil for nopass).
func passwordRef(vc *v1alpha1.ValkeyCluster, user string) (*corev1.SecretKeySelector, error) {
	if strings.HasPrefix(user, "_") {
		secret, err := v1alpha1.SystemUsersSecretOf(vc)
		if err != nil {
			return nil, err
		}
		return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: user}, nil
	}
	for _, u := range vc.Spec.Users {
		if u.Name != user {
			continue
		}
		if u.NoPass || u.PasswordSecret == nil || len(u.PasswordSecret.Keys) == 0 {
			return nil, nil
		}
		return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: u.PasswordSecret.Name}, Key: u.PasswordSecret.Keys[0]}, nil
	}
	return nil, fmt.Errorf("the cluster has no user %q (spec.users, or a system user such as _operator)", user)
}

// cliPod is the temporary pod: valkey-cli in cluster mode against the client Service,
// the password in its environment from the Secret, TLS with the cluster's accepted CA.
// Without a command it is interactive (stdin and a TTY, for kubectl attach).
func cliPod(vc *v1alpha1.ValkeyCluster, user, image string, command []string) (*corev1.Pod, error) {
	ref, err := passwordRef(vc, user)
	if err != nil {
		return nil, err
	}
	if image == "" {
		image = vc.Spec.ImageOrDefault()
	}
	suffix := make([]byte, 3)
	if _, err := rand.Read(suffix); err != nil {
		return nil, err
	}
	args := []string{"-c", "-h", v1alpha1.ClientServiceName(vc.Name) + "." + vc.Namespace + ".svc", "-p", "6379", "--user", user}
	c := corev1.Container{
		Name:    cliContainer,
		Image:   image,
		Command: []string{"valkey-cli"},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To[int64](999),
			RunAsGroup:               ptr.To[int64](999),
			ReadOnlyRootFilesystem:   ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		// valkey-cli reads its history file from HOME.
		Env:          []corev1.EnvVar{{Name: "HOME", Value: "/tmp"}},
		VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
	}
	if ref != nil {
		// REDISCLI_AUTH is what valkey-cli 8 reads; VALKEYCLI_AUTH the newer name.
		for _, name := range []string{"REDISCLI_AUTH", "VALKEYCLI_AUTH"} {
			c.Env = append(c.Env, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: ref}})
		}
	}
	volumes := []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if vc.Spec.TLS != nil {
		copyName, err := v1alpha1.AcceptedTLSSecretOf(vc)
		if err != nil {
			return nil, err
		}
		volumes = append(volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: copyName, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "tls", MountPath: "/etc/valkey/tls", ReadOnly: true})
		args = append(args, "--tls", "--cacert", "/etc/valkey/tls/ca.crt")
	}
	if len(command) == 0 {
		c.Stdin, c.StdinOnce, c.TTY = true, true, true
	}
	c.Args = append(args, command...)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      vc.Name + "-cli-" + hex.EncodeToString(suffix),
			Namespace: vc.Namespace,
			Labels: map[string]string{
				"app.kubernetes.io/name": "valkey-cli", v1alpha1.LabelInstance: vc.Name,
				v1alpha1.LabelManagedBy: "kubectl-valkey",
			},
			// Deleted with the cluster, should the plugin not get to it.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ValkeyCluster",
				Name: vc.Name, UID: vc.UID}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         ptr.To[int64](3600),
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			ImagePullSecrets:              vc.Spec.ImagePullSecrets,
			Containers:                    []corev1.Container{c},
			Volumes:                       volumes,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		},
	}, nil
}

// logs returns the output of the pod's valkey-cli.
func (e *env) logs(ctx context.Context, pod *corev1.Pod) (string, error) {
	b, err := e.cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: cliContainer}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("read the output of %s: %w", pod.Name, err)
	}
	return string(b), nil
}
