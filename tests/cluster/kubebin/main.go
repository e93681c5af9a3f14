// kubebin: kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl and
// etcd from their published source (the versions go.mod pins), linked once. One component
// runs per process: the components share global feature-gate state (kubernetes#130483).
//
//	kubebin COMPONENT [flags...]
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

func run(c *cobra.Command, args []string) int {
	c.SetArgs(args)
	return cli.Run(c)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kubebin etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kubectl|reflectors [flags]")
		os.Exit(2)
	}
	name, args := os.Args[1], os.Args[2:]
	switch name {
	case "etcd":
		etcdmain.Main(append([]string{"etcd"}, args...))
	case "kube-apiserver":
		os.Exit(run(apiserver.NewAPIServerCommand(), args))
	case "kube-controller-manager":
		os.Exit(run(controllermanager.NewControllerManagerCommand(), args))
	case "kube-scheduler":
		os.Exit(run(scheduler.NewSchedulerCommand(), args))
	case "kubelet":
		os.Exit(run(kubelet.NewKubeletCommand(context.Background()), args))
	case "kubectl":
		c := kubectlcmd.NewDefaultKubectlCommand()
		c.SetArgs(args)
		if err := cli.RunNoErrOutput(c); err != nil {
			cmdutil.CheckErr(err)
		}
	case "reflectors":
		os.Exit(reflectors(args))
	default:
		fmt.Fprintf(os.Stderr, "kubebin: unknown component %q\n", name)
		os.Exit(2)
	}
}
