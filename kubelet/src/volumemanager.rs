//! Pod volumes on the host: emptyDir (disk and Memory), hostPath, configMap, secret, projected
//! (service account token, configMap, secret, downwardAPI) and downwardAPI, written atomically
//! and refreshed when their sources change. Owner: the volumes engineer.
