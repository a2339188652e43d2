package backup

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/api/validation"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/jobapi"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/layout"
	"github.com/valkey-operator/valkey-operator/internal/valkeyconn"
)

// Annotations of a backup Job: the member it reads and the role it was chosen for.
const (
	annotationSource     = "valkey.io/source"
	annotationSourceRole = "valkey.io/source-role"
	annotationAttempt    = "valkey.io/attempt"
)

// Container names, whose termination messages carry the Results.
const (
	containerBackup = "backup"
	containerFetch  = "fetch"
	containerServer = "server"
	containerLoad   = "load"
	containerStore  = "store"
)

// privatePort is the port of a restore pod's private server (on loopback only).
const privatePort = 6380

// JobSettings are what every Job of the controller shares.
type JobSettings struct {
	// Image is the operator image; its /usr/local/bin/backup-controller runs the Jobs.
	Image string
	// DeadlineSeconds bounds each backup and restore Job (activeDeadlineSeconds).
	DeadlineSeconds int64
	// StoreDeadlineSeconds bounds each store Job: probe, manifest write and read,
	// deletion (0: DefaultStoreDeadline).
	StoreDeadlineSeconds int64
	// StorePolicy is the operator's object-store endpoint policy (its
	// --object-store-allowed-endpoints and --kubernetes-api-addresses, the
	// KUBERNETES_SERVICE_HOST the controller saw included), passed to every Job that
	// reaches a store: the Job checks each address it connects to against it.
	StorePolicy validation.EndpointPolicy
}

// DefaultStoreDeadline bounds a store Job unless JobSettings say otherwise: time for the
// pod to start and for the step's own timeout (2 minutes) with a margin.
const DefaultStoreDeadline = 5 * time.Minute

func (s JobSettings) storeDeadline() int64 {
	if s.StoreDeadlineSeconds > 0 {
		return s.StoreDeadlineSeconds
	}
	return int64(DefaultStoreDeadline / time.Second)
}

func (s JobSettings) command() string { return "/usr/local/bin/backup-controller" }

// backupJobName names shard's attempt of a backup; the backup's name is at most 48
// characters (validation), so this fits a label value.
func backupJobName(backup string, shard int32, attempt int) string {
	return fmt.Sprintf("%s-s%d-%d", backup, shard, attempt)
}

// restoreJobName names the restore Job of a backed-up shard.
func restoreJobName(cluster string, shard int32) string {
	return fmt.Sprintf("%s-restore-%d", cluster, shard)
}

// source is the member a shard's snapshot is taken from.
type source struct {
	node string
	ip   string
	role v1alpha1.Role
}

// jobLabels are the labels of a cluster's backup and restore Jobs and their pods. They
// are not the members' (app.kubernetes.io/name=valkey): the cluster's Services and
// disruption budgets select members by those, and must never pick a Job's pod.
func jobLabels(cluster, component string) map[string]string {
	return map[string]string{
		v1alpha1.LabelName: JobAppName, v1alpha1.LabelInstance: cluster,
		v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelComponent: component,
	}
}

// JobAppName is the app.kubernetes.io/name of the Jobs' pods.
const JobAppName = "valkey-backup"

func podSecurity() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532),
		FSGroup: ptr.To[int64](65532), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func containerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// publishedSecrets says what a Job waits for while the cluster's status does not name a
// Secret it mounts: the system users' (status.acl) and, with TLS, the accepted
// certificate (status.tls). No Job is built before both are named.
func publishedSecrets(vc *v1alpha1.ValkeyCluster) error {
	if _, err := v1alpha1.SystemUsersSecretOf(vc); err != nil {
		return err
	}
	_, err := v1alpha1.AcceptedTLSSecretOf(vc)
	return err
}

// clusterTLS mounts the CA of the cluster's accepted certificate (and only it), from the
// copy status.tls.acceptedSecretName names (publishedSecrets checked it is named).
func clusterTLS(vc *v1alpha1.ValkeyCluster) ([]string, []corev1.Volume, []corev1.VolumeMount) {
	if vc.Spec.TLS == nil {
		return nil, nil, nil
	}
	secret, _ := v1alpha1.AcceptedTLSSecretOf(vc)
	return []string{"--tls-ca-file=" + tlsCAFile},
		[]corev1.Volume{secretKeyVolume("tls-ca", secret, "ca.crt", "ca.crt")},
		[]corev1.VolumeMount{{Name: "tls-ca", MountPath: mountTLS, ReadOnly: true}}
}

// userPassword mounts one system user's password key of the Secret
// status.acl.systemUsersSecretName names (publishedSecrets checked it is named).
func userPassword(vc *v1alpha1.ValkeyCluster, user string) (corev1.Volume, corev1.VolumeMount) {
	secret, _ := v1alpha1.SystemUsersSecretOf(vc)
	return secretKeyVolume("user", secret, user, "password"),
		corev1.VolumeMount{Name: "user", MountPath: mountPassword, ReadOnly: true}
}

// backupJob builds the Job that takes one shard's snapshot from src into the store.
func backupJob(s JobSettings, vb *v1alpha1.ValkeyBackup, vc *v1alpha1.ValkeyCluster, shard int32, attempt int, src source, dir string) *batchv1.Job {
	args := []string{jobapi.CmdBackup,
		"--addr=" + valkeyconn.Addr(src.ip), "--role=" + string(src.role),
		"--object=" + path.Join(dir, layout.ShardObject(shard)), "--password-file=" + passwordFile}
	args = append(args, storeArgs(s, &vb.Spec.ObjectStore)...)
	tlsArgs, volumes, mounts := clusterTLS(vc)
	args = append(args, tlsArgs...)
	pv, pm := userPassword(vc, v1alpha1.UserBackup)
	sv, sm := storeVolumes(&vb.Spec.ObjectStore)
	volumes = append(append(volumes, pv), sv...)
	mounts = append(append(mounts, pm), sm...)
	labels := jobLabels(vc.Name, "backup")
	labels[v1alpha1.LabelBackup] = vb.Name
	labels[v1alpha1.LabelShardIndex] = strconv.Itoa(int(shard))
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: backupJobName(vb.Name, shard, attempt), Namespace: vb.Namespace, Labels: labels,
			Annotations: map[string]string{annotationSource: src.node, annotationSourceRole: string(src.role), annotationAttempt: strconv.Itoa(attempt)},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To(s.DeadlineSeconds),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext:              podSecurity(),
					ImagePullSecrets:             vc.Spec.ImagePullSecrets,
					Volumes:                      volumes,
					Containers: []corev1.Container{{
						Name: containerBackup, Image: s.Image, Command: []string{s.command()}, Args: args,
						Env: storeEnv(&vb.Spec.ObjectStore), VolumeMounts: mounts,
						SecurityContext:          containerSecurity(),
						TerminationMessagePolicy: corev1.TerminationMessageReadFile,
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
						},
					}},
				},
			},
		},
	}
	return j
}

// restoreJob builds the Job that restores the backed-up shard of the backup at dir (sum is
// its manifest's summary) into the cluster: fetch (it reads the manifest itself, and the
// shard's snapshot, verified), a private valkey-server of the cluster's image loading it
// (a native sidecar, on loopback), and load (every key into the cluster).
func restoreJob(s JobSettings, vc *v1alpha1.ValkeyCluster, store *v1alpha1.ObjectStoreSpec, dir string, shard int32, sum layout.Summary) *batchv1.Job {
	fetchArgs := []string{jobapi.CmdRestoreFetch, "--dir=" + dir, "--shard=" + strconv.Itoa(int(shard)),
		"--shards=" + strconv.Itoa(int(sum.Shards)), "--out=" + mountData + "/dump.rdb"}
	fetchArgs = append(fetchArgs, storeArgs(s, store)...)
	loadArgs := []string{jobapi.CmdRestoreLoad, "--source=127.0.0.1:" + strconv.Itoa(privatePort),
		"--cluster=" + clusterAddr(vc), "--password-file=" + passwordFile}
	tlsArgs, volumes, tlsMounts := clusterTLS(vc)
	loadArgs = append(loadArgs, tlsArgs...)
	pv, pm := userPassword(vc, v1alpha1.UserRestore)
	sv, sm := storeVolumes(store)
	data := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	dm := corev1.VolumeMount{Name: "data", MountPath: mountData}
	volumes = append(append(volumes, pv, data), sv...)
	labels := jobLabels(vc.Name, "restore")
	labels[v1alpha1.LabelRestore] = vc.Name
	labels[v1alpha1.LabelShardIndex] = strconv.Itoa(int(shard))
	// The private server holds the shard's whole data set: ask for about twice the
	// largest snapshot's size (its memory footprint), without a limit.
	mem := resource.NewQuantity(max(64<<20, 2*sum.MaxObjectSize), resource.BinarySI)
	small := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: restoreJobName(vc.Name, shard), Namespace: vc.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To(s.DeadlineSeconds),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext:              podSecurity(),
					ImagePullSecrets:             vc.Spec.ImagePullSecrets,
					Volumes:                      volumes,
					InitContainers: []corev1.Container{{
						Name: containerFetch, Image: s.Image, Command: []string{s.command()}, Args: fetchArgs,
						Env: storeEnv(store), VolumeMounts: append([]corev1.VolumeMount{dm}, sm...),
						SecurityContext: containerSecurity(), TerminationMessagePolicy: corev1.TerminationMessageReadFile,
						Resources: small,
					}, {
						Name: containerServer, Image: vc.Spec.ImageOrDefault(), RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
						Command: []string{"valkey-server"},
						Args: []string{"--port", strconv.Itoa(privatePort), "--bind", "127.0.0.1", "--dir", mountData,
							"--dbfilename", "dump.rdb", "--save", "", "--appendonly", "no"},
						VolumeMounts:    []corev1.VolumeMount{dm},
						SecurityContext: containerSecurity(),
						Resources:       corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: *mem}},
					}},
					Containers: []corev1.Container{{
						Name: containerLoad, Image: s.Image, Command: []string{s.command()}, Args: loadArgs,
						VolumeMounts:    append(tlsMounts, pm),
						SecurityContext: containerSecurity(), TerminationMessagePolicy: corev1.TerminationMessageReadFile,
						Resources: small,
					}},
				},
			},
		},
	}
}

// clusterAddr is the client Service of a cluster, which a cluster client seeds from.
func clusterAddr(vc *v1alpha1.ValkeyCluster) string {
	return fmt.Sprintf("%s.%s.svc:%d", v1alpha1.ClientServiceName(vc.Name), vc.Namespace, valkeyconn.Port)
}

// jobState is what a pass reads of a Job.
type jobState int

const (
	jobRunning jobState = iota
	jobSucceeded
	jobFailed
)

// stateOf reads a Job's conditions.
func stateOf(j *batchv1.Job) jobState {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return jobSucceeded
		case batchv1.JobFailed:
			return jobFailed
		}
	}
	return jobRunning
}

// failureMessage is a failed Job's own reason (deadline, backoff) when its pod left no
// Result.
func failureMessage(j *batchv1.Job) (string, string) {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			if c.Reason == "DeadlineExceeded" {
				return v1alpha1.ReasonDeadlineExceeded, jobapi.CleanMessage("the Job ran out of time (" + strings.TrimSpace(c.Message) + ")")
			}
			return v1alpha1.ReasonTransferFailed, jobapi.CleanMessage(fmt.Sprintf("Job %s failed: %s %s", j.Name, c.Reason, c.Message))
		}
	}
	return v1alpha1.ReasonTransferFailed, "Job " + j.Name + " failed"
}

// finishedAt is when a Job finished (its terminal condition's time), zero while it runs.
func finishedAt(j *batchv1.Job) time.Time {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// resultOf finds the Result a Job's pod left in a termination message: the first
// failure among containers, or else the success of the last of them. A message that is
// not a Result (too long, not JSON, a reason that is no word) counts as none.
func resultOf(pods []corev1.Pod, containers ...string) (jobapi.Result, bool) {
	var ok jobapi.Result
	found := false
	for _, p := range pods {
		statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
		for _, cs := range statuses {
			if !slices.Contains(containers, cs.Name) || cs.State.Terminated == nil || cs.State.Terminated.Message == "" {
				continue
			}
			r, err := jobapi.ParseResult(cs.State.Terminated.Message)
			if err != nil {
				continue
			}
			if r.Reason != "" {
				return r, true
			}
			if cs.State.Terminated.ExitCode == 0 && cs.Name == containers[len(containers)-1] {
				ok, found = r, true
			}
		}
	}
	return ok, found
}
