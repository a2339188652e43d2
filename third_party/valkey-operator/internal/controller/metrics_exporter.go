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
	"fmt"

	valkeyiov1alpha1 "github.com/valkey-io/valkey-operator/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// generateMetricsExporterContainerDef generates the container definition for the metrics exporter sidecar.
func generateMetricsExporterContainerDef(exporter valkeyiov1alpha1.ExporterSpec, clusterName string, tlsSpec *valkeyiov1alpha1.NodeTLSSpec) corev1.Container {
	exporterImage := DefaultExporterImage
	if exporter.Image != "" {
		exporterImage = exporter.Image
	}

	scheme := "redis"
	if tlsSpec != nil {
		scheme = "rediss"
	}

	env := []corev1.EnvVar{
		{Name: "REDIS_ADDR", Value: fmt.Sprintf("%s://localhost:%d", scheme, DefaultPort)},
		{Name: "REDIS_USER", Value: exporterUser},
		{
			Name: "REDIS_PASSWORD",
			ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{
						Name: getSystemPasswordSecretName(clusterName),
					},
					Key: exporterUser,
				},
			},
		},
	}
	var volumeMounts []corev1.VolumeMount

	if tlsSpec != nil {
		env = append(env, corev1.EnvVar{
			Name:  "REDIS_EXPORTER_TLS_CA_CERT_FILE",
			Value: fmt.Sprintf("%s/%s", tlsCertMountPath, tlsSecretKeyCA),
		})
		volumeMounts = append(volumeMounts, corev1.VolumeMount{
			Name:      tlsVolumeName,
			MountPath: tlsCertMountPath,
			ReadOnly:  true,
		})
	}

	return corev1.Container{
		Name:         "metrics-exporter",
		Image:        exporterImage,
		Env:          env,
		Args:         exporter.Args,
		VolumeMounts: volumeMounts,
		Ports: []corev1.ContainerPort{
			{
				Name:          "metrics",
				ContainerPort: DefaultExporterPort,
				Protocol:      corev1.ProtocolTCP,
			},
		},
		LivenessProbe: &corev1.Probe{
			InitialDelaySeconds: 10,
			PeriodSeconds:       10,
			TimeoutSeconds:      3,
			ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{
					Path: "/health",
					Port: intstr.FromInt(DefaultExporterPort),
				},
			},
		},
		ReadinessProbe: &corev1.Probe{
			InitialDelaySeconds: 5,
			PeriodSeconds:       1,
			TimeoutSeconds:      3,
			ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{
					Path: "/health",
					Port: intstr.FromInt(DefaultExporterPort),
				},
			},
		},
		Resources:       exporter.Resources,
		SecurityContext: exporter.SecurityContext,
	}
}
