"""Node image runtimes: `oci` pulls an image with skopeo into a node cache and runs the job in it under bubblewrap."""
