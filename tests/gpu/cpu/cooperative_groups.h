/* cooperative_groups for the CPU runs of the GPU test set: kumi_gpu_cpu.h defines the namespace. */
