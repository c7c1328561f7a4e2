"""The BibTeX of each paper pcctune implements or builds on: the ``citation`` sentence-transformers puts in model
cards, and the docs' "Citing" page (generated from this module)."""

# Pcc-tuning: the Pearson stage-2 loss and its variants
PCC_TUNING = """@article{zhang2024pcctuning,
    title={Pcc-tuning: Breaking the Contrastive Learning Ceiling in Semantic Textual Similarity},
    author={Zhang, Bowen and Li, Chunping},
    journal={arXiv preprint arXiv:2406.09790},
    year={2024}
}"""

# PromptEOL (Scaling Sentence Embeddings with LLMs): templates and DPO alignment
PROMPTEOL = """@article{jiang2023scaling,
    title={Scaling Sentence Embeddings with Large Language Models},
    author={Jiang, Ting and Huang, Shaohan and Luan, Zhongzhi and Wang, Deqing and Zhuang, Fuzhen},
    journal={arXiv preprint arXiv:2307.16645},
    year={2023}
}"""

# DCPCSE (Deep Continuous Prompt for Contrastive Learning of Sentence Embeddings): deep prompts, auxiliary MLM
DCPCSE = """@article{jiang2022dcpcse,
    title={Deep Continuous Prompt for Contrastive Learning of Sentence Embeddings},
    author={Jiang, Yuxin and Wang, Wei},
    journal={arXiv preprint arXiv:2203.06875},
    year={2022}
}"""

# SimCSE: InfoNCE with in-batch and hard negatives
SIMCSE = """@inproceedings{gao2021simcse,
    title={SimCSE: Simple Contrastive Learning of Sentence Embeddings},
    author={Gao, Tianyu and Yao, Xingcheng and Chen, Danqi},
    booktitle={EMNLP},
    year={2021}
}"""

# Fast differentiable sorting and ranking: the soft ranks of soft Spearman
SOFT_RANKS = """@inproceedings{blondel2020fast,
    title={Fast Differentiable Sorting and Ranking},
    author={Blondel, Mathieu and Teboul, Olivier and Berthet, Quentin and Djolonga, Josip},
    booktitle={ICML},
    year={2020}
}"""

# The regression framework: Translated ReLU and Smooth K2
REGRESSION = """@article{zhang2024regression,
    title={Advancing Semantic Textual Similarity Modeling: A Regression Framework with
           Translated ReLU and Smooth K2 Loss},
    author={Zhang, Bowen and Li, Chunping},
    journal={arXiv preprint arXiv:2406.05326},
    year={2024}
}"""
