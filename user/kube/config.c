// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The Kubernetes API client's configuration: in-cluster (the service account and
 * KUBERNETES_SERVICE_HOST/PORT, as client-go's rest.InClusterConfig) or an explicit server. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube/client_internal.h"
#include "sys/fileio.h"
#include "sys/log.h"

static int copy_path(char *dst, size_t len, const char *src)
{
	if (strlen(src) >= len)
		return -ENAMETOOLONG;
	strcpy(dst, src);
	return 0;
}


int kube_read_trimmed(const char *path, char *buf, size_t len)
{
	ssize_t n = fileio_read_at(AT_FDCWD, path, buf, len);

	if (n < 0)
		return (int)n;
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	return 0;
}

static bool valid_port(const char *port)
{
	char *end;
	long value;

	errno = 0;
	value = strtol(port, &end, 10);
	return port[0] && !*end && !errno && value > 0 && value < 65536;
}

static int in_cluster_server(struct kube_config *config, const struct kube_config_options *options)
{
	const char *host = options->service_host ? options->service_host : getenv("KUBERNETES_SERVICE_HOST");
	const char *port = options->service_port ? options->service_port : getenv("KUBERNETES_SERVICE_PORT");
	int n;

	if (!host || !host[0] || !port || !port[0]) {
		log_err("kube: not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
			"are not both set; give --kube-api-server");
		return -ENOENT;
	}
	if (!valid_port(port)) {
		log_err("kube: KUBERNETES_SERVICE_PORT=\"%s\" is not a port number", port);
		return -EINVAL;
	}
	/* An IPv6 literal needs brackets in a URL (client-go: net.JoinHostPort). */
	n = snprintf(config->server, sizeof(config->server), strchr(host, ':') ? "https://[%s]:%s" :
		     "https://%s:%s", host, port);
	if (n < 0 || (size_t)n >= sizeof(config->server)) {
		log_err("kube: KUBERNETES_SERVICE_HOST is too long");
		return -ENAMETOOLONG;
	}
	return 0;
}

static int explicit_server(struct kube_config *config, const char *url)
{
	size_t len = strlen(url);

	/* The token is a credential: it never travels in clear text. */
	if (strncmp(url, "https://", 8) || len == 8 || strpbrk(url + 8, " \t\n?#")) {
		log_err("kube: --kube-api-server \"%s\": expected https://host[:port][/prefix]", url);
		return -EINVAL;
	}
	while (len > 8 && url[len - 1] == '/')
		len--;
	if (len >= sizeof(config->server)) {
		log_err("kube: --kube-api-server is too long");
		return -ENAMETOOLONG;
	}
	memcpy(config->server, url, len);
	config->server[len] = '\0';
	return 0;
}

/* Whether path reads as a PEM certificate and private key in one file (the kubelet's
 * -current.pem: client-go util/certificate certificate_store.go writes both). Cheap: no
 * parse, libcurl parses it on each new connection. */
static bool pem_cert_and_key(const char *path)
{
	char *text = malloc(KUBE_CLIENT_CERT_MAX_BYTES);
	bool ok;

	if (!text || kube_read_trimmed(path, text, KUBE_CLIENT_CERT_MAX_BYTES)) {
		free(text);
		return false;
	}
	ok = strstr(text, "-----BEGIN CERTIFICATE-----") && strstr(text, "PRIVATE KEY-----");
	explicit_bzero(text, KUBE_CLIENT_CERT_MAX_BYTES);
	free(text);
	return ok;
}

/* --kube-pods-client-cert: which identity lists and watches the pods (doc/DESIGN.md §8,
 * "Read scope"). Logged once. */
static int pods_identity(struct kube_config *config, const struct kube_config_options *options)
{
	const char *want = options->pods_client_cert && options->pods_client_cert[0] ? options->pods_client_cert :
			   "auto";
	const char *root_dir = options->kubelet_root_dir && options->kubelet_root_dir[0] ?
			       options->kubelet_root_dir : "/var/lib/kubelet";
	char relative[PATH_MAX], path[PATH_MAX];
	int err;

	if (!strcmp(want, "none")) {
		log_info("kube: pods are listed and watched with the token (--kube-pods-client-cert=none)");
		return 0;
	}
	if (strcmp(want, "auto")) {
		if (copy_path(config->pods_client_cert, sizeof(config->pods_client_cert), want)) {
			log_err("kube: --kube-pods-client-cert: the path is too long");
			return -ENAMETOOLONG;
		}
		if (access(want, R_OK)) {
			err = -errno;
			log_err("kube: --kube-pods-client-cert %s: %s", want, strerror(-err));
			return err;
		}
		if (!pem_cert_and_key(want))
			log_warn("kube: --kube-pods-client-cert %s: no PEM certificate and private key found in it", want);
		log_info("kube: pods are listed and watched as the client certificate %s; every other request "
			 "with the token", want);
		return 0;
	}
	if (snprintf(relative, sizeof(relative), "%s/%s", root_dir, KUBE_KUBELET_CLIENT_CERT) >= (int)sizeof(relative) ||
	    fileio_join_root(path, sizeof(path), options->root, relative)) {
		log_err("kube: the kubelet's client certificate path under %s is too long", root_dir);
		return -ENAMETOOLONG;
	}
	if (access(path, R_OK) == 0 && pem_cert_and_key(path)) {
		snprintf(config->pods_client_cert, sizeof(config->pods_client_cert), "%s", path);
		log_info("kube: pods are listed and watched as the kubelet's client certificate %s (the Node "
			 "authorizer's scope: this node's pods only); every other request with the token", path);
	} else {
		log_info("kube: pods are listed and watched with the token: no readable kubelet client certificate "
			 "and key at %s (--kube-pods-client-cert)", path);
	}
	return 0;
}

int kube_config_load(struct kube_config *config, const struct kube_config_options *options)
{
	char sa_token[PATH_MAX], sa_ca[PATH_MAX], sa_namespace[PATH_MAX];
	int err;

	memset(config, 0, sizeof(*config));
	if ((err = fileio_join_root(sa_token, sizeof(sa_token), options->root, KUBE_SERVICE_ACCOUNT_DIR "/token")) ||
	    (err = fileio_join_root(sa_ca, sizeof(sa_ca), options->root, KUBE_SERVICE_ACCOUNT_DIR "/ca.crt")) ||
	    (err = fileio_join_root(sa_namespace, sizeof(sa_namespace), options->root,
			     KUBE_SERVICE_ACCOUNT_DIR "/namespace"))) {
		log_err("kube: the service-account paths under %s are too long", options->root);
		return err;
	}

	if (options->api_server && options->api_server[0]) {
		err = explicit_server(config, options->api_server);
	} else {
		err = in_cluster_server(config, options);
		config->in_cluster = true;
	}
	if (err)
		return err;

	if (options->token_file && options->token_file[0])
		err = copy_path(config->token_path, sizeof(config->token_path), options->token_file);
	else if (config->in_cluster || access(sa_token, R_OK) == 0)
		err = copy_path(config->token_path, sizeof(config->token_path), sa_token);
	if (!err && (options->ca_file && options->ca_file[0]))
		err = copy_path(config->ca_path, sizeof(config->ca_path), options->ca_file);
	else if (!err && (config->in_cluster || access(sa_ca, R_OK) == 0))
		err = copy_path(config->ca_path, sizeof(config->ca_path), sa_ca);
	if (err) {
		log_err("kube: the token or CA file path is too long");
		return err;
	}
	if (config->token_path[0] && access(config->token_path, R_OK)) {
		err = -errno;
		log_err("kube: token file %s: %s", config->token_path, strerror(-err));
		return err;
	}
	if (config->ca_path[0] && access(config->ca_path, R_OK)) {
		err = -errno;
		log_err("kube: CA file %s: %s", config->ca_path, strerror(-err));
		return err;
	}
	/* Optional: only for messages and as a default namespace. */
	if (kube_read_trimmed(sa_namespace, config->namespace_, sizeof(config->namespace_)))
		config->namespace_[0] = '\0';
	log_info("kube: API server %s (%s), token %s, CA %s", config->server,
		 config->in_cluster ? "in-cluster" : "--kube-api-server",
		 config->token_path[0] ? config->token_path : "none",
		 config->ca_path[0] ? config->ca_path : "the system's");
	return pods_identity(config, options);
}
