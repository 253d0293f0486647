"""An example of a repository that tests its own Triton kernels with triton-export-compat."""
