package backup

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
	"github.com/valkey-operator/valkey-operator/backup-controller/internal/jobapi"
)

// The store Jobs: the controller never talks to an object store itself. Each read,
// write, probe and deletion of a store runs in one of these Jobs, in the namespace of
// the backup or cluster, with the tenant's credentials from the tenant's Secret; the
// controller reads only its Result (the termination message, at most 4 KiB).
//
// Their components (the app.kubernetes.io/component label):
const (
	// componentProbe lists the bucket before a backup starts ({backup}-probe).
	componentProbe = "probe"
	// componentManifest writes a backup's manifest from a ConfigMap
	// ({backup}-manifest-{attempt}).
	componentManifest = "manifest"
	// componentDelete deletes a backup's objects ({backup}-delete-{attempt}).
	componentDelete = "delete"
	// componentReadManifest reads a data source's manifest for a restore
	// ({cluster}-restore-manifest-{attempt}).
	componentReadManifest = "restore-manifest"
)

// Store Job attempts.
const (
	// MaxManifestAttempts bounds the Jobs writing one manifest: then the backup fails.
	MaxManifestAttempts = 3
	// MaxDeleteAttempts bounds the Jobs deleting one backup's objects: then the
	// finalizer is released and the objects stay (an ObjectsLeft event says so).
	MaxDeleteAttempts = 5
)

// manifestKey is the key of the manifest in the ConfigMap that carries it to its Job.
const manifestKey = "manifest.json"

// mountManifest is where the manifest's ConfigMap is mounted.
const mountManifest = "/var/run/valkey/manifest"

func probeJobName(backup string) string { return backup + "-probe" }

func manifestJobName(backup string, attempt int) string {
	return backup + "-manifest-" + strconv.Itoa(attempt)
}

// manifestConfigMapName names the ConfigMap of a backup's manifest after the backup's
// UID too: one left by an earlier backup of the same name (its garbage collection
// pending) is never taken for this one's.
func manifestConfigMapName(vb *v1alpha1.ValkeyBackup) string {
	uid := string(vb.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return vb.Name + "-manifest-" + uid
}

func deleteJobName(backup string, attempt int) string {
	return backup + "-delete-" + strconv.Itoa(attempt)
}

func readManifestJobName(cluster string, attempt int) string {
	return cluster + "-restore-manifest-" + strconv.Itoa(attempt)
}

// storeJobSpec is what differs between store Jobs.
type storeJobSpec struct {
	name, namespace, cluster, component string
	// owner is the label naming the owner (LabelBackup or LabelRestore) and its value.
	ownerLabel, ownerName string
	attempt               int
	store                 *v1alpha1.ObjectStoreSpec
	pullSecrets           []corev1.LocalObjectReference
	args                  []string
	volumes               []corev1.Volume
	mounts                []corev1.VolumeMount
}

// storeJob builds a Job that talks only to the object store: no Valkey server, no
// ServiceAccount token, the store's credentials (and CA bundle) and nothing else of the
// tenant's Secrets.
func storeJob(s JobSettings, spec storeJobSpec) *batchv1.Job {
	labels := jobLabels(spec.cluster, spec.component)
	labels[spec.ownerLabel] = spec.ownerName
	sv, sm := storeVolumes(spec.store)
	args := append(append([]string{}, spec.args...), storeArgs(s, spec.store)...)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: spec.name, Namespace: spec.namespace, Labels: labels,
			Annotations: map[string]string{annotationAttempt: strconv.Itoa(spec.attempt)},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To(s.storeDeadline()),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext:              podSecurity(),
					ImagePullSecrets:             spec.pullSecrets,
					Volumes:                      append(append([]corev1.Volume{}, spec.volumes...), sv...),
					Containers: []corev1.Container{{
						Name: containerStore, Image: s.Image, Command: []string{s.command()}, Args: args,
						Env: storeEnv(spec.store), VolumeMounts: append(append([]corev1.VolumeMount{}, spec.mounts...), sm...),
						SecurityContext:          containerSecurity(),
						TerminationMessagePolicy: corev1.TerminationMessageReadFile,
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
						},
					}},
				},
			},
		},
	}
}

// backupStoreJob is a store Job of a backup.
func backupStoreJob(vb *v1alpha1.ValkeyBackup, pullSecrets []corev1.LocalObjectReference, component, name string, attempt int, args []string) storeJobSpec {
	return storeJobSpec{name: name, namespace: vb.Namespace, cluster: vb.Spec.ClusterName, component: component,
		ownerLabel: v1alpha1.LabelBackup, ownerName: vb.Name, attempt: attempt, store: &vb.Spec.ObjectStore,
		pullSecrets: pullSecrets, args: args}
}

// probeJob lists the backup's prefix in the bucket: the store answers to the
// credentials before any server forks for a snapshot.
func probeJob(s JobSettings, vb *v1alpha1.ValkeyBackup, pullSecrets []corev1.LocalObjectReference) *batchv1.Job {
	return storeJob(s, backupStoreJob(vb, pullSecrets, componentProbe, probeJobName(vb.Name), 1,
		[]string{jobapi.CmdStoreProbe, "--prefix=" + vb.Spec.ObjectStore.Prefix}))
}

// manifestJob writes the manifest carried by the backup's ConfigMap into its folder dir.
func manifestJob(s JobSettings, vb *v1alpha1.ValkeyBackup, dir string, pullSecrets []corev1.LocalObjectReference, attempt int) *batchv1.Job {
	spec := backupStoreJob(vb, pullSecrets, componentManifest, manifestJobName(vb.Name, attempt), attempt,
		[]string{jobapi.CmdManifestWrite, "--dir=" + dir, "--manifest-file=" + mountManifest + "/" + manifestKey})
	mode := int32(0o444)
	spec.volumes = []corev1.Volume{{Name: "manifest", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: manifestConfigMapName(vb)},
		Items:                []corev1.KeyToPath{{Key: manifestKey, Path: manifestKey}}, DefaultMode: &mode,
	}}}}
	spec.mounts = []corev1.VolumeMount{{Name: "manifest", MountPath: mountManifest, ReadOnly: true}}
	return storeJob(s, spec)
}

// deleteJob deletes the objects of the backup in its folder dir, its manifest first.
func deleteJob(s JobSettings, vb *v1alpha1.ValkeyBackup, dir string, pullSecrets []corev1.LocalObjectReference, attempt int) *batchv1.Job {
	return storeJob(s, backupStoreJob(vb, pullSecrets, componentDelete, deleteJobName(vb.Name, attempt), attempt,
		[]string{jobapi.CmdStoreDelete, "--dir=" + dir}))
}

// readManifestJob reads and checks the manifest of the backup at dir and reports its
// summary, for the restore of vc.
func readManifestJob(s JobSettings, vc *v1alpha1.ValkeyCluster, store *v1alpha1.ObjectStoreSpec, dir string, attempt int) *batchv1.Job {
	return storeJob(s, storeJobSpec{name: readManifestJobName(vc.Name, attempt), namespace: vc.Namespace, cluster: vc.Name,
		component: componentReadManifest, ownerLabel: v1alpha1.LabelRestore, ownerName: vc.Name, attempt: attempt,
		store: store, pullSecrets: vc.Spec.ImagePullSecrets, args: []string{jobapi.CmdManifestRead, "--dir=" + dir}})
}

// storeRun is one store Job as a pass reads it.
type storeRun struct {
	job   *batchv1.Job
	n     int
	state jobState
	// ok: it succeeded and left a Result without a reason.
	ok     bool
	result jobapi.Result
	// reason, message say why it failed: from its Result, or from the Job itself.
	reason, message string
	// finished is when it ended (zero while it runs).
	finished time.Time
}

// storeRuns returns the Jobs of component among jobs, by attempt, oldest first.
func storeRuns(jobs []batchv1.Job, component string) []*batchv1.Job {
	var out []*batchv1.Job
	for i := range jobs {
		if jobs[i].Labels[v1alpha1.LabelComponent] == component {
			out = append(out, &jobs[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return attemptOf(out[i]) < attemptOf(out[j]) })
	return out
}

func attemptOf(j *batchv1.Job) int {
	n, _ := strconv.Atoi(j.Annotations[annotationAttempt])
	return n
}

// readRun reads a store Job and, once it finished, its pod's Result.
func readRun(ctx context.Context, r client.Reader, j *batchv1.Job) (storeRun, error) {
	run := storeRun{job: j, n: attemptOf(j), state: stateOf(j), finished: finishedAt(j)}
	if run.state == jobRunning {
		return run, nil
	}
	pods, err := jobPods(ctx, r, j)
	if err != nil {
		return run, err
	}
	res, has := resultOf(pods, containerStore)
	run.result = res
	switch {
	case has && res.Reason != "":
		run.reason, run.message = res.Reason, res.Message
	case run.state == jobFailed:
		run.reason, run.message = failureMessage(j)
	case !has:
		run.reason, run.message = v1alpha1.ReasonTransferFailed, fmt.Sprintf("Job %s succeeded without a result", j.Name)
	default:
		run.ok = true
	}
	return run, nil
}

// retryIn is how long to wait before the attempt after run, which failed at its
// finished time, delay after it.
func retryIn(run storeRun, delay time.Duration, now time.Time) time.Duration {
	return max(0, run.finished.Add(delay).Sub(now))
}
