"""What is computed: each op's problem shape, arrays, flops and bytes, reference and error model."""
