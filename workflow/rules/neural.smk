# Segmentation, fine-tuning, scoring and fusion rules (Birch's neural half).
