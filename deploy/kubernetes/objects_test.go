package kubernetes

import (
	"slices"
	"testing"
)

// The rendered objects as the tests read them: the fields they check.

type meta struct {
	Name      string            `yaml:"name"`
	Namespace string            `yaml:"namespace"`
	Labels    map[string]string `yaml:"labels"`
}

type kContainer struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name      string `yaml:"name"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name     string `yaml:"name"`
				Key      string `yaml:"key"`
				Optional *bool  `yaml:"optional"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
}

type kDeployment struct {
	Metadata meta `yaml:"metadata"`
	Spec     struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata meta `yaml:"metadata"`
			Spec     struct {
				SecurityContext struct {
					RunAsNonRoot *bool  `yaml:"runAsNonRoot"`
					RunAsUser    *int64 `yaml:"runAsUser"`
				} `yaml:"securityContext"`
				InitContainers []kContainer `yaml:"initContainers"`
				Containers     []kContainer `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// all is every container of the pod, init containers first.
func (d kDeployment) all() []kContainer {
	return append(slices.Clone(d.Spec.Template.Spec.InitContainers), d.Spec.Template.Spec.Containers...)
}

func (d kDeployment) container(t *testing.T, name string) kContainer {
	t.Helper()
	for _, c := range d.all() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("Deployment %s has no container %s", d.Metadata.Name, name)
	panic("unreachable")
}

func (c kContainer) port(name string) int {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

type kService struct {
	Metadata meta `yaml:"metadata"`
	Spec     struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type kPodMonitor struct {
	APIVersion string `yaml:"apiVersion"`
	Metadata   meta   `yaml:"metadata"`
	Spec       struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		PodMetricsEndpoints []struct {
			Port string `yaml:"port"`
			Path string `yaml:"path"`
		} `yaml:"podMetricsEndpoints"`
	} `yaml:"spec"`
}

type kConfigMap struct {
	Data map[string]string `yaml:"data"`
}

// subset reports whether every label of sel is on labels.
func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}
