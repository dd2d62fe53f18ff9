"""GENERATED: the transformers config-class defaults of the keys the model rules read.

Made by hack/models/gen_model_defaults.py from transformers 5.24.0: do not edit.
Per model type: ``defaults`` (key -> the class's value), ``derived`` (key -> the key
it follows: ``=num_attention_heads``, or ``hidden_size // num_attention_heads``) and
``text`` (the model type of the class's ``text_config``). A key absent here has no
default in the class (None): vLLM's own fallback applies. A model type absent here is
unknown: its omitted keys are unknown to the rules.
"""

from typing import Any, Dict

TRANSFORMERS_VERSION = "5.24.0"

MODELS: Dict[str, Dict[str, Any]] = {
    "EvollaModel": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "max_position_embeddings": 8192,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 128256,
        }
    },
    "afmoe": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 2048,
            "intermediate_size": 6144,
            "max_position_embeddings": 16384,
            "moe_intermediate_size": 1408,
            "num_attention_heads": 16,
            "num_experts": 64,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 200192,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "aimv2": {"text": "aimv2_text_model"},
    "aimv2_text_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 2048,
            "max_position_embeddings": 77,
            "num_attention_heads": 6,
            "num_hidden_layers": 12,
            "vocab_size": 49408,
        }
    },
    "aimv2_vision_model": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 2816,
            "num_attention_heads": 8,
            "num_hidden_layers": 24,
        }
    },
    "albert": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 16384,
            "max_position_embeddings": 512,
            "num_attention_heads": 64,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30000,
        }
    },
    "align": {"text": "align_text_model"},
    "align_text_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 30522,
        }
    },
    "align_vision_model": {"defaults": {"num_hidden_layers": 55}},
    "altclip": {"text": "altclip_text_model"},
    "altclip_text_model": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "max_position_embeddings": 514,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
            "vocab_size": 250002,
        }
    },
    "altclip_vision_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "apertus": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "max_position_embeddings": 65536,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 131072,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "apertus1p5": {"defaults": {"tie_word_embeddings": False}, "text": "apertus1p5_text"},
    "apertus1p5_text": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "max_position_embeddings": 65536,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 266752,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "apertus1p5_vision_tokenizer": {},
    "arcee": {
        "defaults": {
            "hidden_size": 2560,
            "intermediate_size": 18432,
            "max_position_embeddings": 4096,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "aria": {"defaults": {"tie_word_embeddings": False}, "text": "aria_text"},
    "aria_text": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 4096,
            "max_position_embeddings": 2048,
            "moe_num_experts": 8,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "audio-spectrogram-transformer": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "audioflamingo3": {},
    "audioflamingo3_encoder": {
        "defaults": {
            "hidden_size": 1280,
            "intermediate_size": 5120,
            "num_attention_heads": 20,
            "num_hidden_layers": 32,
        }
    },
    "autoformer": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {"d_model": 64, "encoder_attention_heads": 2, "encoder_layers": 2},
    },
    "axk1": {
        "aliases": {"num_local_experts": "n_routed_experts"},
        "defaults": {
            "head_dim": 64,
            "hidden_size": 7168,
            "intermediate_size": 18432,
            "kv_lora_rank": 512,
            "max_position_embeddings": 32768,
            "moe_intermediate_size": 2048,
            "n_routed_experts": 192,
            "n_shared_experts": 1,
            "num_attention_heads": 64,
            "num_hidden_layers": 61,
            "num_key_value_heads": 64,
            "q_lora_rank": 1536,
            "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64,
            "tie_word_embeddings": False,
            "v_head_dim": 128,
            "vocab_size": 163840,
        },
    },
    "axk2": {
        "aliases": {"num_local_experts": "n_routed_experts"},
        "defaults": {
            "hidden_size": 2048,
            "intermediate_size": 5120,
            "kv_lora_rank": 128,
            "max_position_embeddings": 131072,
            "moe_intermediate_size": 512,
            "n_routed_experts": 128,
            "n_shared_experts": 1,
            "num_attention_heads": 32,
            "num_hidden_layers": 48,
            "num_key_value_heads": 32,
            "q_lora_rank": 384,
            "qk_nope_head_dim": 64,
            "qk_rope_head_dim": 32,
            "tie_word_embeddings": False,
            "v_head_dim": 64,
            "vocab_size": 163840,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "aya_vision": {"defaults": {"tie_word_embeddings": True}},
    "bailing_hybrid": {
        "aliases": {
            "max_position_embeddings": "model_max_length",
            "n_shared_experts": "num_shared_experts",
            "num_local_experts": "num_experts",
        },
        "defaults": {
            "first_k_dense_replace": 2,
            "head_dim": 64,
            "hidden_size": 2560,
            "intermediate_size": 6144,
            "kv_lora_rank": 512,
            "model_max_length": 262144,
            "moe_intermediate_size": 768,
            "num_attention_heads": 32,
            "num_experts": 512,
            "num_hidden_layers": 42,
            "num_key_value_heads": 32,
            "num_shared_experts": 1,
            "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64,
            "tie_word_embeddings": False,
            "v_head_dim": 128,
            "vocab_size": 157184,
        },
    },
    "bamba": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "mamba_n_groups": 1,
            "mamba_n_heads": 128,
            "max_position_embeddings": 262144,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 128000,
        }
    },
    "bark": {},
    "bart": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 1024,
            "encoder_attention_heads": 16,
            "encoder_layers": 12,
            "max_position_embeddings": 1024,
            "tie_word_embeddings": True,
            "vocab_size": 50265,
        },
    },
    "beit": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 8192,
        }
    },
    "bert": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "bert-generation": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "max_position_embeddings": 512,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
            "tie_word_embeddings": True,
            "vocab_size": 50358,
        }
    },
    "big_bird": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 4096,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 50358,
        }
    },
    "bigbird_pegasus": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 1024,
            "encoder_attention_heads": 16,
            "encoder_layers": 16,
            "max_position_embeddings": 4096,
            "tie_word_embeddings": True,
            "vocab_size": 96103,
        },
    },
    "biogpt": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "max_position_embeddings": 1024,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
            "tie_word_embeddings": True,
            "vocab_size": 42384,
        }
    },
    "bit": {},
    "bitnet": {
        "defaults": {
            "hidden_size": 2560,
            "intermediate_size": 6912,
            "max_position_embeddings": 2048,
            "num_attention_heads": 20,
            "num_hidden_layers": 30,
            "num_key_value_heads": 5,
            "tie_word_embeddings": False,
            "vocab_size": 128256,
        }
    },
    "blenderbot": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 2560,
            "encoder_attention_heads": 32,
            "encoder_layers": 2,
            "max_position_embeddings": 128,
            "tie_word_embeddings": True,
            "vocab_size": 8008,
        },
    },
    "blenderbot-small": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 512,
            "encoder_attention_heads": 16,
            "encoder_layers": 8,
            "max_position_embeddings": 512,
            "tie_word_embeddings": True,
            "vocab_size": 50265,
        },
    },
    "blip": {"defaults": {"tie_word_embeddings": True}, "text": "blip_text_model"},
    "blip-2": {},
    "blip_2_qformer": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 30522,
        }
    },
    "blip_2_vision_model": {
        "defaults": {
            "hidden_size": 1408,
            "intermediate_size": 6144,
            "num_attention_heads": 16,
            "num_hidden_layers": 39,
        }
    },
    "blip_text_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 8,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30524,
        }
    },
    "blip_vision_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "bloom": {
        "aliases": {"num_attention_heads": "n_head", "num_hidden_layers": "n_layer"},
        "defaults": {
            "hidden_size": 64,
            "n_head": 8,
            "n_layer": 2,
            "tie_word_embeddings": True,
            "vocab_size": 250880,
        },
    },
    "blt": {
        "defaults": {
            "max_position_embeddings": 4096,
            "tie_word_embeddings": False,
            "vocab_size": 260,
        }
    },
    "blt_global_transformer": {
        "defaults": {
            "hidden_size": 2048,
            "intermediate_size": 5632,
            "max_position_embeddings": 4096,
            "num_attention_heads": 16,
            "num_hidden_layers": 25,
            "tie_word_embeddings": False,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "blt_local_decoder": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 2816,
            "max_position_embeddings": 24576,
            "num_attention_heads": 16,
            "num_hidden_layers": 9,
            "tie_word_embeddings": False,
            "vocab_size": 260,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "blt_local_encoder": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 2730,
            "max_position_embeddings": 24576,
            "num_attention_heads": 16,
            "num_hidden_layers": 1,
            "tie_word_embeddings": False,
            "vocab_size": 260,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "blt_patcher": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 2048,
            "max_position_embeddings": 8192,
            "num_attention_heads": 12,
            "num_hidden_layers": 14,
            "tie_word_embeddings": False,
            "vocab_size": 260,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "bridgetower": {
        "defaults": {
            "hidden_size": 768,
            "num_attention_heads": 12,
            "num_hidden_layers": 6,
            "tie_word_embeddings": False,
        },
        "text": "bridgetower_text_model",
    },
    "bridgetower_text_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 514,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 50265,
        }
    },
    "bridgetower_vision_model": {"defaults": {"hidden_size": 768, "num_hidden_layers": 12}},
    "bros": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 30522,
        }
    },
    "camembert": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "canary": {"defaults": {"tie_word_embeddings": True, "vocab_size": 16384}},
    "canary_decoder": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "max_position_embeddings": 1024,
            "num_attention_heads": 8,
            "num_hidden_layers": 8,
            "num_key_value_heads": 8,
            "vocab_size": 16384,
        }
    },
    "canine": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 16384,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "chameleon": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_position_embeddings": 4096,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 32,
            "tie_word_embeddings": False,
            "vocab_size": 65536,
        }
    },
    "chameleon_vqgan": {},
    "chinese_clip": {"text": "chinese_clip_text_model"},
    "chinese_clip_text_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 30522,
        }
    },
    "chinese_clip_vision_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "chmv2": {},
    "clap": {"defaults": {"hidden_size": 768, "num_hidden_layers": 16}, "text": "clap_text_model"},
    "clap_audio_model": {
        "defaults": {
            "hidden_size": 768,
            "num_attention_heads": [4, 8, 16, 32],
            "num_hidden_layers": 4,
        }
    },
    "clap_text_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 514,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 50265,
        }
    },
    "clip": {"text": "clip_text_model"},
    "clip_text_model": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "max_position_embeddings": 77,
            "num_attention_heads": 8,
            "num_hidden_layers": 12,
            "vocab_size": 49408,
        }
    },
    "clip_vision_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "clipseg": {"text": "clipseg_text_model"},
    "clipseg_text_model": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "max_position_embeddings": 77,
            "num_attention_heads": 8,
            "num_hidden_layers": 12,
            "vocab_size": 49408,
        }
    },
    "clipseg_vision_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "clvp": {"text": "clvp_encoder"},
    "clvp_decoder": {
        "defaults": {
            "hidden_size": 1024,
            "max_position_embeddings": 608,
            "num_attention_heads": 16,
            "num_hidden_layers": 30,
            "vocab_size": 8194,
        }
    },
    "clvp_encoder": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 1536,
            "num_attention_heads": 12,
            "num_hidden_layers": 20,
            "vocab_size": 256,
        }
    },
    "codegen": {
        "aliases": {
            "hidden_size": "n_embd",
            "max_position_embeddings": "n_positions",
            "num_attention_heads": "n_head",
            "num_hidden_layers": "n_layer",
        },
        "defaults": {
            "n_embd": 4096,
            "n_head": 16,
            "n_layer": 28,
            "n_positions": 2048,
            "tie_word_embeddings": False,
            "vocab_size": 50400,
        },
    },
    "cohere": {
        "defaults": {
            "hidden_size": 8192,
            "intermediate_size": 22528,
            "max_position_embeddings": 8192,
            "num_attention_heads": 64,
            "num_hidden_layers": 40,
            "tie_word_embeddings": True,
            "vocab_size": 256000,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "cohere2": {
        "defaults": {
            "hidden_size": 8192,
            "intermediate_size": 22528,
            "max_position_embeddings": 8192,
            "num_attention_heads": 64,
            "num_hidden_layers": 40,
            "tie_word_embeddings": True,
            "vocab_size": 256000,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "cohere2_moe": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 8192,
            "intermediate_size": 22528,
            "max_position_embeddings": 8192,
            "num_attention_heads": 64,
            "num_experts": 8,
            "num_hidden_layers": 40,
            "tie_word_embeddings": True,
            "vocab_size": 256000,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "cohere2_vision": {"defaults": {"tie_word_embeddings": True}},
    "cohere_asr": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "max_position_embeddings": 1024,
            "num_attention_heads": 8,
            "num_hidden_layers": 8,
            "tie_word_embeddings": False,
            "vocab_size": 16384,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "cohere_compass": {"defaults": {"tie_word_embeddings": False}, "text": "cohere_compass_text"},
    "cohere_compass_text": {
        "defaults": {
            "hidden_size": 8192,
            "intermediate_size": 22528,
            "max_position_embeddings": 8192,
            "num_attention_heads": 64,
            "num_hidden_layers": 40,
            "tie_word_embeddings": True,
            "vocab_size": 256000,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "cohere_compass_vision": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
        "defaults": {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "num_heads": 16},
    },
    "colmodernvbert": {},
    "colpali": {},
    "colqwen2": {},
    "conditional_detr": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {"d_model": 256, "encoder_attention_heads": 8, "encoder_layers": 6},
    },
    "convbert": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "convnext": {"aliases": {"num_hidden_layers": "num_stages"}, "defaults": {"num_stages": 4}},
    "convnextv2": {"aliases": {"num_hidden_layers": "num_stages"}, "defaults": {"num_stages": 4}},
    "cosmos3_edge": {"defaults": {"tie_word_embeddings": False}, "text": "cosmos3_edge_text"},
    "cosmos3_edge_text": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 2048,
            "intermediate_size": 9216,
            "max_position_embeddings": 131072,
            "num_attention_heads": 16,
            "num_hidden_layers": 28,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 131072,
        }
    },
    "cosmos3_edge_vision": {
        "defaults": {
            "hidden_size": 1152,
            "intermediate_size": 4304,
            "num_attention_heads": 16,
            "num_hidden_layers": 27,
        }
    },
    "cosmos3_omni": {"defaults": {"tie_word_embeddings": False}},
    "cpmant": {
        "defaults": {
            "hidden_size": 4096,
            "num_attention_heads": 32,
            "num_hidden_layers": 48,
            "tie_word_embeddings": True,
            "vocab_size": 30720,
        }
    },
    "csm": {
        "defaults": {
            "hidden_size": 2048,
            "intermediate_size": 8192,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 16,
            "num_key_value_heads": 8,
            "tie_word_embeddings": True,
            "vocab_size": 2051,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "csm_depth_decoder_model": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 8192,
            "max_position_embeddings": 33,
            "num_attention_heads": 8,
            "num_hidden_layers": 4,
            "num_key_value_heads": 2,
            "vocab_size": 2051,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "ctrl": {
        "aliases": {
            "hidden_size": "n_embd",
            "max_position_embeddings": "n_positions",
            "num_attention_heads": "n_head",
            "num_hidden_layers": "n_layer",
        },
        "defaults": {
            "n_embd": 1280,
            "n_head": 16,
            "n_layer": 48,
            "n_positions": 256,
            "tie_word_embeddings": True,
            "vocab_size": 246534,
        },
    },
    "cvt": {"defaults": {"num_heads": [1, 3, 6]}},
    "cwm": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 6144,
            "intermediate_size": 21504,
            "max_position_embeddings": 131072,
            "num_attention_heads": 48,
            "num_hidden_layers": 64,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 128256,
        }
    },
    "d_fine": {
        "aliases": {"hidden_size": "d_model", "num_attention_heads": "encoder_attention_heads"},
        "defaults": {
            "d_model": 256,
            "encoder_attention_heads": 8,
            "head_dim": 32,
            "tie_word_embeddings": True,
        },
    },
    "dab-detr": {
        "aliases": {
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "encoder_attention_heads": 8,
            "encoder_layers": 6,
            "hidden_size": 256,
            "tie_word_embeddings": True,
        },
    },
    "dac": {"defaults": {"hidden_size": 1024}},
    "data2vec-audio": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 32,
        }
    },
    "data2vec-text": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "data2vec-vision": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "dbrx": {
        "aliases": {
            "hidden_size": "d_model",
            "max_position_embeddings": "max_seq_len",
            "num_attention_heads": "n_heads",
            "num_hidden_layers": "n_layers",
        },
        "defaults": {
            "d_model": 2048,
            "max_seq_len": 2048,
            "n_heads": 16,
            "n_layers": 24,
            "num_key_value_heads": 1,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        },
    },
    "deberta": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 50265,
        }
    },
    "deberta-v2": {
        "defaults": {
            "hidden_size": 1536,
            "intermediate_size": 6144,
            "max_position_embeddings": 512,
            "num_attention_heads": 24,
            "num_hidden_layers": 24,
            "tie_word_embeddings": True,
            "vocab_size": 128100,
        }
    },
    "decision_transformer": {
        "aliases": {
            "max_position_embeddings": "n_positions",
            "num_attention_heads": "n_head",
            "num_hidden_layers": "n_layer",
        },
        "defaults": {
            "hidden_size": 128,
            "n_head": 1,
            "n_layer": 3,
            "n_positions": 1024,
            "vocab_size": 1,
        },
    },
    "deepseek_ocr2": {"defaults": {"tie_word_embeddings": False}, "text": "deepseek_ocr2_text"},
    "deepseek_ocr2_encoder": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 22016,
            "max_position_embeddings": 32768,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 32,
            "tie_word_embeddings": False,
            "vocab_size": 151936,
        }
    },
    "deepseek_ocr2_sam_vision_model": {
        "defaults": {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12}
    },
    "deepseek_ocr2_text": {
        "aliases": {"num_experts": "n_routed_experts"},
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_position_embeddings": 2048,
            "moe_intermediate_size": 1407,
            "n_routed_experts": 64,
            "n_shared_experts": 2,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 102400,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "deepseek_ocr2_vision": {},
    "deepseek_v2": {
        "aliases": {"num_experts": "n_routed_experts"},
        "defaults": {
            "first_k_dense_replace": 0,
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "kv_lora_rank": 512,
            "max_position_embeddings": 2048,
            "moe_intermediate_size": 1407,
            "n_routed_experts": 64,
            "n_shared_experts": 2,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "q_lora_rank": 1536,
            "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64,
            "tie_word_embeddings": False,
            "v_head_dim": 128,
            "vocab_size": 102400,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "deepseek_v3": {
        "aliases": {"num_local_experts": "n_routed_experts"},
        "defaults": {
            "first_k_dense_replace": 3,
            "head_dim": 64,
            "hidden_size": 7168,
            "intermediate_size": 18432,
            "kv_lora_rank": 512,
            "max_position_embeddings": 4096,
            "moe_intermediate_size": 2048,
            "n_routed_experts": 256,
            "n_shared_experts": 1,
            "num_attention_heads": 128,
            "num_hidden_layers": 61,
            "num_key_value_heads": 128,
            "q_lora_rank": 1536,
            "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64,
            "tie_word_embeddings": False,
            "v_head_dim": 128,
            "vocab_size": 129280,
        },
    },
    "deepseek_v4": {
        "aliases": {
            "intermediate_size": "moe_intermediate_size",
            "num_local_experts": "n_routed_experts",
        },
        "defaults": {
            "head_dim": 512,
            "hidden_size": 4096,
            "max_position_embeddings": 1048576,
            "moe_intermediate_size": 2048,
            "n_routed_experts": 256,
            "n_shared_experts": 1,
            "num_attention_heads": 64,
            "num_hidden_layers": 43,
            "num_key_value_heads": 1,
            "q_lora_rank": 1024,
            "qk_rope_head_dim": 64,
            "tie_word_embeddings": False,
            "vocab_size": 129280,
        },
    },
    "deepseek_vl": {"defaults": {"tie_word_embeddings": True}},
    "deepseek_vl_hybrid": {"defaults": {"tie_word_embeddings": True}},
    "deformable_detr": {
        "aliases": {"hidden_size": "d_model", "num_attention_heads": "encoder_attention_heads"},
        "defaults": {
            "d_model": 256,
            "encoder_attention_heads": 8,
            "max_position_embeddings": 1024,
            "tie_word_embeddings": True,
        },
    },
    "deimv2": {
        "aliases": {"hidden_size": "d_model", "num_attention_heads": "encoder_attention_heads"},
        "defaults": {
            "d_model": 256,
            "encoder_attention_heads": 8,
            "head_dim": 32,
            "tie_word_embeddings": True,
        },
    },
    "deit": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "depth_anything": {},
    "depth_pro": {},
    "detr": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {"d_model": 256, "encoder_attention_heads": 8, "encoder_layers": 6},
    },
    "dia": {},
    "dia_decoder": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 2048,
            "intermediate_size": 8192,
            "max_position_embeddings": 3072,
            "num_attention_heads": 16,
            "num_hidden_layers": 18,
            "num_key_value_heads": 4,
            "vocab_size": 1028,
        }
    },
    "dia_encoder": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "max_position_embeddings": 1024,
            "num_attention_heads": 16,
            "num_hidden_layers": 12,
            "num_key_value_heads": 16,
            "vocab_size": 256,
        }
    },
    "diffllama": {
        "defaults": {
            "hidden_size": 2048,
            "intermediate_size": 8192,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 16,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "diffusion_gemma": {"defaults": {"tie_word_embeddings": True}, "text": "diffusion_gemma_text"},
    "diffusion_gemma_text": {
        "defaults": {
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "max_position_embeddings": 131072,
            "num_attention_heads": 8,
            "num_hidden_layers": 30,
            "num_key_value_heads": 4,
            "tie_word_embeddings": True,
            "vocab_size": 262144,
        }
    },
    "dinat": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "num_layers"},
        "defaults": {"hidden_size": 512, "num_heads": [2, 4, 8, 16], "num_layers": 4},
    },
    "dinov2": {
        "defaults": {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12}
    },
    "dinov2_with_registers": {
        "defaults": {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12}
    },
    "dinov3_convnext": {},
    "dinov3_vit": {
        "defaults": {
            "hidden_size": 384,
            "intermediate_size": 1536,
            "num_attention_heads": 6,
            "num_hidden_layers": 12,
        }
    },
    "distilbert": {
        "aliases": {
            "hidden_size": "dim",
            "num_attention_heads": "n_heads",
            "num_hidden_layers": "n_layers",
        },
        "defaults": {
            "dim": 768,
            "max_position_embeddings": 512,
            "n_heads": 12,
            "n_layers": 6,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        },
    },
    "doge": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 2048,
            "max_position_embeddings": 2048,
            "num_attention_heads": 8,
            "num_experts": 16384,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 32768,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "donut-swin": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "num_layers"},
        "defaults": {"hidden_size": 768, "num_heads": [3, 6, 12, 24], "num_layers": 4},
    },
    "dots1": {
        "aliases": {"num_local_experts": "n_routed_experts"},
        "defaults": {
            "first_k_dense_replace": 0,
            "hidden_size": 4608,
            "intermediate_size": 10944,
            "max_position_embeddings": 2048,
            "moe_intermediate_size": 1408,
            "num_attention_heads": 32,
            "num_hidden_layers": 62,
            "num_key_value_heads": 32,
            "tie_word_embeddings": False,
            "vocab_size": 152064,
        },
    },
    "dots3_note_audio_encoder": {
        "defaults": {
            "hidden_size": 1280,
            "intermediate_size": 5120,
            "max_position_embeddings": 6000,
            "num_attention_heads": 20,
            "num_hidden_layers": 32,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "dots3_note_text": {
        "aliases": {"num_local_experts": "n_routed_experts"},
        "defaults": {
            "head_dim": 256,
            "hidden_size": 5120,
            "intermediate_size": 13824,
            "max_position_embeddings": 524288,
            "moe_intermediate_size": 1536,
            "n_routed_experts": 256,
            "n_shared_experts": 1,
            "num_hidden_layers": 46,
            "q_lora_rank": 1024,
            "qk_rope_head_dim": 64,
            "tie_word_embeddings": False,
            "v_head_dim": 128,
            "vocab_size": 152064,
        },
    },
    "dots3_note_vision_encoder": {
        "defaults": {
            "hidden_size": 1536,
            "intermediate_size": 4224,
            "moe_intermediate_size": 2112,
            "num_attention_heads": 24,
            "num_hidden_layers": 42,
        }
    },
    "dpr": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 30522,
        }
    },
    "dpt": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "edgetam": {},
    "edgetam_mask_decoder": {
        "defaults": {"hidden_size": 256, "num_attention_heads": 8, "num_hidden_layers": 2}
    },
    "edgetam_prompt_encoder": {"defaults": {"hidden_size": 256}},
    "edgetam_video": {},
    "edgetam_video_mask_decoder": {
        "defaults": {"hidden_size": 256, "num_attention_heads": 8, "num_hidden_layers": 2}
    },
    "edgetam_video_prompt_encoder": {"defaults": {"hidden_size": 256}},
    "edgetam_vision_model": {},
    "efficientloftr": {
        "defaults": {"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 8},
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "efficientnet": {"defaults": {"num_hidden_layers": 64}},
    "electra": {
        "defaults": {
            "hidden_size": 256,
            "intermediate_size": 1024,
            "max_position_embeddings": 512,
            "num_attention_heads": 4,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "embedding_gemma2": {"text": "embedding_gemma2_text"},
    "embedding_gemma2_text": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "max_position_embeddings": 262144,
            "num_attention_heads": 4,
            "num_hidden_layers": 24,
            "vocab_size": 262144,
        }
    },
    "emu3": {"defaults": {"tie_word_embeddings": False}, "text": "emu3_text_model"},
    "emu3_text_model": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "max_position_embeddings": 9216,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 184622,
        }
    },
    "emu3_vqgan": {"defaults": {"hidden_size": 1024, "num_attention_heads": 1}},
    "encodec": {"defaults": {"hidden_size": 128}},
    "encoder-decoder": {},
    "eomt": {"defaults": {"hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 24}},
    "eomt_dinov3": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
        }
    },
    "ernie": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "ernie4_5": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 1024,
            "intermediate_size": 3072,
            "max_position_embeddings": 131072,
            "num_attention_heads": 16,
            "num_hidden_layers": 18,
            "num_key_value_heads": 2,
            "tie_word_embeddings": True,
            "vocab_size": 103424,
        }
    },
    "ernie4_5_moe": {
        "aliases": {"num_experts": "moe_num_experts"},
        "defaults": {
            "hidden_size": 2560,
            "intermediate_size": 12288,
            "max_position_embeddings": 131072,
            "moe_intermediate_size": 1536,
            "moe_num_experts": 64,
            "num_attention_heads": 20,
            "num_hidden_layers": 28,
            "num_key_value_heads": 4,
            "tie_word_embeddings": True,
            "vocab_size": 103424,
        },
    },
    "ernie4_5_vl_moe": {"defaults": {"tie_word_embeddings": True}, "text": "ernie4_5_vl_moe_text"},
    "ernie4_5_vl_moe_text": {
        "aliases": {"num_experts": "moe_num_experts"},
        "defaults": {
            "hidden_size": 2560,
            "intermediate_size": 12288,
            "max_position_embeddings": 131072,
            "moe_intermediate_size": [1536, 512],
            "moe_num_experts": 64,
            "num_attention_heads": 20,
            "num_hidden_layers": 28,
            "num_key_value_heads": 4,
            "tie_word_embeddings": True,
            "vocab_size": 103424,
        },
    },
    "ernie4_5_vl_moe_vision": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
        "defaults": {"depth": 32, "hidden_size": 1280, "intermediate_size": 5120, "num_heads": 16},
    },
    "esm": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 1026,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
        }
    },
    "esmc": {
        "defaults": {
            "hidden_size": 2560,
            "intermediate_size": 6912,
            "max_position_embeddings": 2048,
            "num_attention_heads": 40,
            "num_hidden_layers": 80,
            "tie_word_embeddings": False,
            "vocab_size": 64,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "esmfold2": {"defaults": {"hidden_size": 384}},
    "eurobert": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 8192,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": False,
            "vocab_size": 128256,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "evolla": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "max_position_embeddings": 8192,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 128256,
        }
    },
    "exaone": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "max_position_embeddings": 4096,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 102400,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "exaone4": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 16384,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 32,
            "tie_word_embeddings": False,
            "vocab_size": 102400,
        }
    },
    "exaone4_5": {"defaults": {"tie_word_embeddings": False}},
    "exaone4_5_vision": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
        "defaults": {
            "depth": 32,
            "hidden_size": 3584,
            "intermediate_size": 3420,
            "num_heads": 16,
            "num_key_value_heads": 8,
        },
    },
    "exaone_moe": {
        "defaults": {
            "first_k_dense_replace": 1,
            "hidden_size": 4096,
            "intermediate_size": 16384,
            "max_position_embeddings": 2048,
            "moe_intermediate_size": 1024,
            "num_attention_heads": 32,
            "num_experts": 64,
            "num_hidden_layers": 32,
            "num_key_value_heads": 32,
            "tie_word_embeddings": False,
            "vocab_size": 102400,
        }
    },
    "falcon": {
        "defaults": {
            "hidden_size": 4544,
            "max_position_embeddings": 2048,
            "num_attention_heads": 71,
            "num_hidden_layers": 32,
            "num_kv_heads": 71,
            "tie_word_embeddings": True,
            "vocab_size": 65024,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "falcon_h1": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "mamba_n_groups": 1,
            "mamba_n_heads": 128,
            "max_position_embeddings": 8192,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 128000,
        }
    },
    "falcon_mamba": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 1536,
            "num_hidden_layers": 32,
            "tie_word_embeddings": True,
            "vocab_size": 50280,
        }
    },
    "fast_vlm": {"defaults": {"tie_word_embeddings": False}},
    "fastspeech2_conformer": {
        "aliases": {
            "num_attention_heads": "encoder_num_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "encoder_layers": 4,
            "encoder_num_attention_heads": 2,
            "hidden_size": 384,
            "vocab_size": 78,
        },
    },
    "fastspeech2_conformer_hifigan": {},
    "fastspeech2_conformer_with_hifigan": {},
    "flaubert": {
        "aliases": {
            "hidden_size": "emb_dim",
            "num_attention_heads": "n_heads",
            "num_hidden_layers": "n_layers",
        },
        "defaults": {
            "emb_dim": 2048,
            "max_position_embeddings": 512,
            "n_heads": 16,
            "n_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30145,
        },
    },
    "flava": {
        "defaults": {"hidden_size": 768, "tie_word_embeddings": True},
        "text": "flava_text_model",
    },
    "flava_image_codebook": {"defaults": {"hidden_size": 256, "vocab_size": 8192}},
    "flava_image_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 8192,
        }
    },
    "flava_multimodal_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 6,
        }
    },
    "flava_text_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 30522,
        }
    },
    "flex_olmo": {
        "aliases": {"num_local_experts": "num_experts"},
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_position_embeddings": 4096,
            "num_attention_heads": 32,
            "num_experts": 7,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 100352,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "florence2": {"defaults": {"tie_word_embeddings": True}},
    "florence_vision": {"defaults": {"max_position_embeddings": 50, "num_heads": [4, 8, 16, 32]}},
    "fnet": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 32000,
        }
    },
    "focalnet": {},
    "fsmt": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
            "vocab_size": "tgt_vocab_size",
        },
        "defaults": {
            "d_model": 1024,
            "encoder_attention_heads": 16,
            "encoder_layers": 12,
            "max_position_embeddings": 1024,
            "tgt_vocab_size": 42024,
            "tie_word_embeddings": False,
        },
    },
    "fun_asr_nano": {"defaults": {"tie_word_embeddings": True}},
    "fun_asr_nano_encoder": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "max_position_embeddings": 2049,
            "num_attention_heads": 4,
            "num_hidden_layers": 70,
        }
    },
    "funnel": {
        "aliases": {"hidden_size": "d_model", "num_attention_heads": "n_head"},
        "defaults": {
            "d_model": 768,
            "n_head": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        },
    },
    "fuyu": {"defaults": {"tie_word_embeddings": False}},
    "gemma": {
        "defaults": {
            "head_dim": 256,
            "hidden_size": 3072,
            "intermediate_size": 24576,
            "max_position_embeddings": 8192,
            "num_attention_heads": 16,
            "num_hidden_layers": 28,
            "num_key_value_heads": 16,
            "tie_word_embeddings": True,
            "vocab_size": 256000,
        }
    },
    "gemma2": {
        "defaults": {
            "head_dim": 256,
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "max_position_embeddings": 8192,
            "num_attention_heads": 8,
            "num_hidden_layers": 26,
            "num_key_value_heads": 4,
            "tie_word_embeddings": True,
            "vocab_size": 256000,
        }
    },
    "gemma3": {"defaults": {"tie_word_embeddings": True}, "text": "gemma3_text"},
    "gemma3_text": {
        "defaults": {
            "head_dim": 256,
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "max_position_embeddings": 131072,
            "num_attention_heads": 8,
            "num_hidden_layers": 26,
            "num_key_value_heads": 4,
            "tie_word_embeddings": True,
            "vocab_size": 262208,
        }
    },
    "gemma3n": {"defaults": {"tie_word_embeddings": True}, "text": "gemma3n_text"},
    "gemma3n_audio": {"defaults": {"hidden_size": 1536, "vocab_size": 128}},
    "gemma3n_text": {
        "defaults": {
            "head_dim": 256,
            "hidden_size": 2048,
            "intermediate_size": [
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
                16384,
            ],
            "max_position_embeddings": 32768,
            "num_attention_heads": 8,
            "num_hidden_layers": 35,
            "num_key_value_heads": 2,
            "tie_word_embeddings": True,
            "vocab_size": 262400,
        }
    },
    "gemma3n_vision": {"defaults": {"hidden_size": 2048, "vocab_size": 128}},
    "gemma4": {"defaults": {"tie_word_embeddings": True}, "text": "gemma4_text"},
    "gemma4_audio": {
        "defaults": {"hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 12}
    },
    "gemma4_text": {
        "defaults": {
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "max_position_embeddings": 131072,
            "num_attention_heads": 8,
            "num_hidden_layers": 30,
            "num_key_value_heads": 4,
            "tie_word_embeddings": True,
            "vocab_size": 262144,
        }
    },
    "gemma4_unified": {"defaults": {"tie_word_embeddings": True}, "text": "gemma4_unified_text"},
    "gemma4_unified_assistant": {"defaults": {"tie_word_embeddings": True}},
    "gemma4_unified_audio": {"defaults": {"hidden_size": 640}},
    "gemma4_unified_text": {
        "defaults": {
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "max_position_embeddings": 262144,
            "num_attention_heads": 8,
            "num_hidden_layers": 30,
            "num_key_value_heads": 4,
            "tie_word_embeddings": True,
            "vocab_size": 262144,
        }
    },
    "gemma4_unified_vision": {},
    "gemma4_vision": {
        "defaults": {
            "head_dim": 64,
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 131072,
            "num_attention_heads": 12,
            "num_hidden_layers": 16,
            "num_key_value_heads": 12,
        }
    },
    "git": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 1024,
            "num_attention_heads": 12,
            "num_hidden_layers": 6,
            "tie_word_embeddings": False,
            "vocab_size": 30522,
        }
    },
    "git_vision_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "glm": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 4096,
            "intermediate_size": 13696,
            "max_position_embeddings": 131072,
            "num_attention_heads": 32,
            "num_hidden_layers": 40,
            "num_key_value_heads": 2,
            "tie_word_embeddings": False,
            "vocab_size": 151552,
        }
    },
    "glm4": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 4096,
            "intermediate_size": 13696,
            "max_position_embeddings": 131072,
            "num_attention_heads": 32,
            "num_hidden_layers": 40,
            "num_key_value_heads": 2,
            "tie_word_embeddings": False,
            "vocab_size": 151552,
        }
    },
    "glm46v": {"defaults": {"tie_word_embeddings": False}},
    "glm4_moe": {
        "aliases": {"num_local_experts": "n_routed_experts"},
        "defaults": {
            "first_k_dense_replace": 1,
            "hidden_size": 4096,
            "intermediate_size": 10944,
            "max_position_embeddings": 131072,
            "moe_intermediate_size": 1408,
            "n_routed_experts": 128,
            "n_shared_experts": 1,
            "num_attention_heads": 96,
            "num_hidden_layers": 46,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 151552,
        },
    },
    "glm4_moe_lite": {
        "aliases": {"head_dim": "qk_rope_head_dim", "num_local_experts": "n_routed_experts"},
        "defaults": {
            "hidden_size": 2048,
            "intermediate_size": 10240,
            "kv_lora_rank": 512,
            "max_position_embeddings": 202752,
            "moe_intermediate_size": 1536,
            "n_routed_experts": 64,
            "n_shared_experts": 1,
            "num_attention_heads": 20,
            "num_hidden_layers": 47,
            "num_key_value_heads": 20,
            "q_lora_rank": 768,
            "qk_nope_head_dim": 192,
            "qk_rope_head_dim": 64,
            "tie_word_embeddings": False,
            "v_head_dim": 256,
            "vocab_size": 154880,
        },
    },
    "glm4v": {"defaults": {"tie_word_embeddings": False}, "text": "glm4v_text"},
    "glm4v_moe": {"defaults": {"tie_word_embeddings": False}, "text": "glm4v_moe_text"},
    "glm4v_moe_text": {
        "aliases": {"num_local_experts": "n_routed_experts"},
        "defaults": {
            "first_k_dense_replace": 1,
            "hidden_size": 4096,
            "intermediate_size": 10944,
            "max_position_embeddings": 65536,
            "moe_intermediate_size": 1408,
            "n_routed_experts": 128,
            "n_shared_experts": 1,
            "num_attention_heads": 96,
            "num_hidden_layers": 46,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 151424,
        },
    },
    "glm4v_moe_vision": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
        "defaults": {"depth": 24, "hidden_size": 1536, "intermediate_size": 13696, "num_heads": 12},
    },
    "glm4v_text": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 13696,
            "max_position_embeddings": 32768,
            "num_attention_heads": 32,
            "num_hidden_layers": 40,
            "num_key_value_heads": 2,
            "vocab_size": 151552,
        }
    },
    "glm4v_vision": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
        "defaults": {"depth": 24, "hidden_size": 1536, "intermediate_size": 13696, "num_heads": 12},
    },
    "glm5_next": {"defaults": {"tie_word_embeddings": False}, "text": "glm5_next_text"},
    "glm5_next_text": {
        "aliases": {"num_local_experts": "n_routed_experts"},
        "defaults": {
            "head_dim": 0,
            "hidden_size": 4096,
            "intermediate_size": 12288,
            "kv_lora_rank": 512,
            "max_position_embeddings": 1048576,
            "moe_intermediate_size": 2048,
            "n_routed_experts": 288,
            "n_shared_experts": 1,
            "num_attention_heads": 64,
            "num_hidden_layers": 45,
            "num_key_value_heads": 64,
            "q_lora_rank": 1536,
            "qk_nope_head_dim": 256,
            "qk_rope_head_dim": 0,
            "tie_word_embeddings": False,
            "v_head_dim": 256,
            "vocab_size": 154880,
        },
    },
    "glm5_next_vision": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
        "defaults": {"depth": 24, "hidden_size": 1024, "intermediate_size": 4096, "num_heads": 16},
    },
    "glm_image": {"defaults": {"tie_word_embeddings": False}, "text": "glm_image_text"},
    "glm_image_text": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 13696,
            "max_position_embeddings": 131072,
            "num_attention_heads": 32,
            "num_hidden_layers": 40,
            "num_key_value_heads": 2,
            "vocab_size": 168064,
        }
    },
    "glm_image_vision": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
        "defaults": {"depth": 40, "hidden_size": 1536, "intermediate_size": 6144, "num_heads": 16},
    },
    "glm_image_vqmodel": {},
    "glm_moe_dsa": {
        "aliases": {"num_local_experts": "n_routed_experts"},
        "defaults": {
            "first_k_dense_replace": 3,
            "head_dim": 64,
            "hidden_size": 6144,
            "intermediate_size": 12288,
            "kv_lora_rank": 512,
            "max_position_embeddings": 202752,
            "moe_intermediate_size": 2048,
            "n_routed_experts": 256,
            "n_shared_experts": 1,
            "num_attention_heads": 64,
            "num_hidden_layers": 78,
            "num_key_value_heads": 64,
            "q_lora_rank": 2048,
            "qk_nope_head_dim": 192,
            "qk_rope_head_dim": 64,
            "tie_word_embeddings": False,
            "v_head_dim": 256,
            "vocab_size": 154880,
        },
    },
    "glm_ocr": {"defaults": {"tie_word_embeddings": False}, "text": "glm_ocr_text"},
    "glm_ocr_text": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "max_position_embeddings": 131072,
            "num_attention_heads": 16,
            "num_hidden_layers": 16,
            "num_key_value_heads": 8,
            "vocab_size": 59392,
        }
    },
    "glm_ocr_vision": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
        "defaults": {"depth": 24, "hidden_size": 1024, "intermediate_size": 4096, "num_heads": 16},
    },
    "glmasr": {"defaults": {"tie_word_embeddings": True}},
    "glmasr_encoder": {
        "defaults": {
            "hidden_size": 1280,
            "intermediate_size": 5120,
            "max_position_embeddings": 1500,
            "num_attention_heads": 20,
            "num_hidden_layers": 32,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "glmga": {"defaults": {"tie_word_embeddings": False}},
    "glpn": {"defaults": {"num_attention_heads": [1, 2, 5, 8]}},
    "got_ocr2": {"defaults": {"tie_word_embeddings": True}},
    "got_ocr2_vision": {
        "defaults": {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12}
    },
    "gpt-sw3": {
        "aliases": {
            "hidden_size": "n_embd",
            "max_position_embeddings": "n_positions",
            "num_attention_heads": "n_head",
            "num_hidden_layers": "n_layer",
        },
        "defaults": {
            "n_embd": 768,
            "n_head": 12,
            "n_layer": 12,
            "n_positions": 1024,
            "tie_word_embeddings": True,
            "vocab_size": 50257,
        },
    },
    "gpt2": {
        "aliases": {
            "hidden_size": "n_embd",
            "max_position_embeddings": "n_positions",
            "num_attention_heads": "n_head",
            "num_hidden_layers": "n_layer",
        },
        "defaults": {
            "n_embd": 768,
            "n_head": 12,
            "n_layer": 12,
            "n_positions": 1024,
            "tie_word_embeddings": True,
            "vocab_size": 50257,
        },
    },
    "gpt_bigcode": {
        "aliases": {
            "hidden_size": "n_embd",
            "max_position_embeddings": "n_positions",
            "num_attention_heads": "n_head",
            "num_hidden_layers": "n_layer",
        },
        "defaults": {
            "n_embd": 768,
            "n_head": 12,
            "n_layer": 12,
            "n_positions": 1024,
            "num_key_value_heads": 1,
            "tie_word_embeddings": True,
            "vocab_size": 50257,
        },
    },
    "gpt_neo": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "num_layers"},
        "defaults": {
            "hidden_size": 2048,
            "max_position_embeddings": 2048,
            "num_heads": 16,
            "num_layers": 24,
            "tie_word_embeddings": True,
            "vocab_size": 50257,
        },
    },
    "gpt_neox": {
        "defaults": {
            "hidden_size": 6144,
            "intermediate_size": 24576,
            "max_position_embeddings": 2048,
            "num_attention_heads": 64,
            "num_hidden_layers": 44,
            "tie_word_embeddings": False,
            "vocab_size": 50432,
        }
    },
    "gpt_neox_japanese": {
        "defaults": {
            "hidden_size": 2560,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": True,
            "vocab_size": 32000,
        }
    },
    "gpt_oss": {
        "aliases": {"num_experts": "num_local_experts"},
        "defaults": {
            "head_dim": 64,
            "hidden_size": 2880,
            "intermediate_size": 2880,
            "max_position_embeddings": 131072,
            "num_attention_heads": 64,
            "num_hidden_layers": 36,
            "num_key_value_heads": 8,
            "num_local_experts": 128,
            "tie_word_embeddings": False,
            "vocab_size": 201088,
        },
    },
    "gptj": {
        "aliases": {
            "hidden_size": "n_embd",
            "max_position_embeddings": "n_positions",
            "num_attention_heads": "n_head",
            "num_hidden_layers": "n_layer",
        },
        "defaults": {
            "n_embd": 4096,
            "n_head": 16,
            "n_layer": 28,
            "n_positions": 2048,
            "tie_word_embeddings": False,
            "vocab_size": 50400,
        },
    },
    "gradium_phonon_tts": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 8192,
            "num_attention_heads": 12,
            "num_hidden_layers": 6,
            "vocab_size": 4001,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "granite": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "granite4_vision": {"defaults": {"tie_word_embeddings": False}, "text": "granite4_vision_text"},
    "granite4_vision_text": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "granite_docling": {"defaults": {"tie_word_embeddings": True}, "text": "granite_docling_text"},
    "granite_docling_text": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 2048,
            "max_position_embeddings": 32768,
            "num_attention_heads": 16,
            "num_hidden_layers": 28,
            "num_key_value_heads": 4,
            "tie_word_embeddings": True,
            "vocab_size": 133800,
        }
    },
    "granite_docling_vision": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "granite_speech": {"defaults": {"tie_word_embeddings": True}},
    "granite_speech5_ctc": {"defaults": {"tie_word_embeddings": True, "vocab_size": 16384}},
    "granite_speech5_encoder": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "max_position_embeddings": 512,
            "num_attention_heads": 8,
            "num_hidden_layers": 16,
            "vocab_size": 16384,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "granite_speech_encoder": {
        "aliases": {
            "hidden_size": "hidden_dim",
            "num_attention_heads": "num_heads",
            "num_hidden_layers": "num_layers",
        },
        "defaults": {"hidden_dim": 1024, "num_heads": 8, "num_layers": 10},
    },
    "granite_speech_plus": {"defaults": {"tie_word_embeddings": True}},
    "granite_speech_plus_encoder": {
        "aliases": {
            "hidden_size": "hidden_dim",
            "num_attention_heads": "num_heads",
            "num_hidden_layers": "num_layers",
        },
        "defaults": {"hidden_dim": 1024, "num_heads": 8, "num_layers": 10},
    },
    "granite_swa": {
        "defaults": {
            "hidden_size": 2560,
            "intermediate_size": 8192,
            "max_position_embeddings": 8192,
            "num_attention_heads": 20,
            "num_hidden_layers": 24,
            "num_key_value_heads": 4,
            "tie_word_embeddings": True,
            "vocab_size": 100352,
        }
    },
    "granitemoe": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_local_experts": 8,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "granitemoe_swa": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_local_experts": 8,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "granitemoehybrid": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "mamba_n_groups": 1,
            "mamba_n_heads": 128,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_local_experts": 8,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "granitemoeshared": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_local_experts": 8,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "grounding-dino": {
        "aliases": {"hidden_size": "d_model", "num_attention_heads": "encoder_attention_heads"},
        "defaults": {"d_model": 256, "encoder_attention_heads": 8, "tie_word_embeddings": True},
    },
    "groupvit": {"text": "groupvit_text_model"},
    "groupvit_text_model": {
        "defaults": {
            "hidden_size": 256,
            "intermediate_size": 1024,
            "max_position_embeddings": 77,
            "num_attention_heads": 4,
            "num_hidden_layers": 12,
            "vocab_size": 49408,
        }
    },
    "groupvit_vision_model": {
        "defaults": {
            "hidden_size": 384,
            "intermediate_size": 1536,
            "num_attention_heads": 6,
            "num_hidden_layers": 12,
        }
    },
    "gte": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 8192,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 250048,
        }
    },
    "helium": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 2560,
            "intermediate_size": 7040,
            "max_position_embeddings": 4096,
            "num_attention_heads": 20,
            "num_hidden_layers": 24,
            "num_key_value_heads": 20,
            "tie_word_embeddings": False,
            "vocab_size": 48000,
        }
    },
    "hgnet_v2": {},
    "hiera": {
        "aliases": {"num_hidden_layers": "num_layers"},
        "defaults": {"hidden_size": 768, "num_heads": [1, 2, 4, 8]},
    },
    "higgs_audio_v2": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 3072,
            "intermediate_size": 8192,
            "max_position_embeddings": 2048,
            "num_attention_heads": 24,
            "num_hidden_layers": 28,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 128256,
        }
    },
    "higgs_audio_v2_tokenizer": {"defaults": {"hidden_size": 1024}},
    "hrm_text": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 1536,
            "intermediate_size": 4096,
            "max_position_embeddings": 2048,
            "num_attention_heads": 12,
            "num_hidden_layers": 128,
            "tie_word_embeddings": False,
            "vocab_size": 151808,
        }
    },
    "hubert": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 32,
        }
    },
    "hunyuan_v1_dense": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 290943,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "hunyuan_v1_moe": {
        "aliases": {"num_local_experts": "num_experts"},
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_experts": 1,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 290943,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "hunyuan_vl": {"defaults": {"tie_word_embeddings": True}, "text": "hunyuan_vl_text"},
    "hunyuan_vl_text": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": True,
            "vocab_size": 290943,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "hunyuan_vl_vision": {
        "defaults": {
            "hidden_size": 1152,
            "intermediate_size": 4304,
            "num_attention_heads": 16,
            "num_hidden_layers": 27,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "hy_v3": {
        "aliases": {"num_local_experts": "num_experts"},
        "defaults": {
            "head_dim": 128,
            "hidden_size": 4096,
            "intermediate_size": 13312,
            "max_position_embeddings": 131072,
            "moe_intermediate_size": 1536,
            "num_attention_heads": 64,
            "num_experts": 192,
            "num_hidden_layers": 80,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 120832,
        },
    },
    "hy_v4_vl": {"defaults": {"tie_word_embeddings": False}, "text": "hy_v4_vl_text"},
    "hy_v4_vl_text": {
        "aliases": {"num_local_experts": "n_routed_experts"},
        "defaults": {
            "head_dim": 64,
            "hidden_size": 6144,
            "intermediate_size": 18432,
            "kv_lora_rank": 512,
            "max_position_embeddings": 262144,
            "moe_intermediate_size": 2048,
            "n_routed_experts": 256,
            "n_shared_experts": 1,
            "num_attention_heads": 64,
            "num_hidden_layers": 78,
            "q_lora_rank": 2048,
            "qk_nope_head_dim": 192,
            "qk_rope_head_dim": 64,
            "tie_word_embeddings": False,
            "v_head_dim": 256,
            "vocab_size": 120832,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "hy_v4_vl_vision": {
        "defaults": {
            "hidden_size": 1536,
            "intermediate_size": 6144,
            "num_attention_heads": 16,
            "num_hidden_layers": 40,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "hyperclovax_vision_v2": {"defaults": {"tie_word_embeddings": True}},
    "ibert": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "idefics": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        }
    },
    "idefics2": {"defaults": {"tie_word_embeddings": False}},
    "idefics2_perceiver": {"defaults": {"hidden_size": 4096, "num_key_value_heads": 4}},
    "idefics2_vision": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "idefics3": {"defaults": {"tie_word_embeddings": False}},
    "idefics3_vision": {
        "defaults": {
            "hidden_size": 1152,
            "intermediate_size": 3072,
            "num_attention_heads": 16,
            "num_hidden_layers": 12,
        }
    },
    "idefics_perciever": {},
    "idefics_vision": {
        "aliases": {"hidden_size": "embed_dim"},
        "defaults": {
            "embed_dim": 768,
            "intermediate_size": 5120,
            "num_attention_heads": 16,
            "num_hidden_layers": 32,
        },
    },
    "ijepa": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "imagegpt": {
        "aliases": {
            "hidden_size": "n_embd",
            "max_position_embeddings": "n_positions",
            "num_attention_heads": "n_head",
            "num_hidden_layers": "n_layer",
        },
        "defaults": {
            "n_embd": 512,
            "n_head": 8,
            "n_layer": 24,
            "n_positions": 1024,
            "tie_word_embeddings": False,
            "vocab_size": 513,
        },
    },
    "informer": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {"d_model": 64, "encoder_attention_heads": 2, "encoder_layers": 2},
    },
    "inkling2": {"text": "inkling2_text"},
    "inkling2_loop": {"text": "inkling2_loop_text"},
    "inkling2_loop_text": {
        "aliases": {
            "intermediate_size": "moe_intermediate_size",
            "model_max_length": "max_position_embeddings",
            "num_local_experts": "n_routed_experts",
        },
        "defaults": {
            "head_dim": 128,
            "hidden_size": 2304,
            "max_position_embeddings": 1048576,
            "moe_intermediate_size": 1152,
            "n_routed_experts": 128,
            "num_attention_heads": 24,
            "num_hidden_layers": 24,
            "num_key_value_heads": 8,
            "vocab_size": 201024,
        },
    },
    "inkling2_text": {
        "aliases": {
            "intermediate_size": "moe_intermediate_size",
            "model_max_length": "max_position_embeddings",
            "num_local_experts": "n_routed_experts",
        },
        "defaults": {
            "head_dim": 128,
            "hidden_size": 4608,
            "max_position_embeddings": 1048576,
            "moe_intermediate_size": 2304,
            "n_routed_experts": 384,
            "num_attention_heads": 48,
            "num_hidden_layers": 48,
            "num_key_value_heads": 8,
            "vocab_size": 201024,
        },
    },
    "inkling2_vision": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "num_attention_heads": 16,
            "num_hidden_layers": 23,
        }
    },
    "inkling_audio": {
        "aliases": {"hidden_size": "text_hidden_size"},
        "defaults": {"text_hidden_size": 6144},
    },
    "inkling_text": {
        "aliases": {
            "model_max_length": "max_position_embeddings",
            "num_local_experts": "n_routed_experts",
        },
        "defaults": {
            "head_dim": 128,
            "hidden_size": 6144,
            "intermediate_size": 24576,
            "max_position_embeddings": 131072,
            "moe_intermediate_size": 3072,
            "n_routed_experts": 256,
            "n_shared_experts": 2,
            "num_attention_heads": 64,
            "num_hidden_layers": 66,
            "num_key_value_heads": 8,
            "vocab_size": 201024,
        },
    },
    "inkling_vision": {
        "aliases": {"num_hidden_layers": "n_layers"},
        "defaults": {"hidden_size": 1024, "n_layers": 24, "num_attention_heads": 16},
    },
    "instructblip": {},
    "instructblip_qformer": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 30522,
        }
    },
    "instructblip_vision_model": {
        "defaults": {
            "hidden_size": 1408,
            "intermediate_size": 6144,
            "num_attention_heads": 16,
            "num_hidden_layers": 39,
        }
    },
    "instructblipvideo": {},
    "instructblipvideo_qformer": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 30522,
        }
    },
    "instructblipvideo_vision_model": {
        "defaults": {
            "hidden_size": 1408,
            "intermediate_size": 6144,
            "num_attention_heads": 16,
            "num_hidden_layers": 39,
        }
    },
    "internlm3": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 4096,
            "intermediate_size": 10240,
            "max_position_embeddings": 32768,
            "num_attention_heads": 32,
            "num_hidden_layers": 48,
            "num_key_value_heads": 2,
            "tie_word_embeddings": False,
            "vocab_size": 128512,
        }
    },
    "internvl": {"defaults": {"tie_word_embeddings": True}},
    "internvl_vision": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
        }
    },
    "iquestcoder": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 5120,
            "intermediate_size": 27648,
            "max_position_embeddings": 131072,
            "num_attention_heads": 40,
            "num_hidden_layers": 80,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 76800,
        }
    },
    "jais2": {
        "defaults": {
            "hidden_size": 3328,
            "intermediate_size": 26624,
            "max_position_embeddings": 8192,
            "num_attention_heads": 26,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 150272,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "jamba": {
        "aliases": {"num_local_experts": "num_experts"},
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "max_position_embeddings": 262144,
            "num_attention_heads": 32,
            "num_experts": 16,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 65536,
        },
    },
    "janus": {"defaults": {"tie_word_embeddings": True}},
    "janus_vision_model": {
        "defaults": {"hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 24}
    },
    "janus_vqgan": {"defaults": {"num_hidden_layers": 2}},
    "jetmoe": {
        "aliases": {"head_dim": "kv_channels"},
        "defaults": {
            "hidden_size": 2048,
            "intermediate_size": 5632,
            "kv_channels": 128,
            "max_position_embeddings": 4096,
            "num_attention_heads": 32,
            "num_hidden_layers": 12,
            "num_key_value_heads": 16,
            "num_local_experts": 8,
            "tie_word_embeddings": True,
            "vocab_size": 32000,
        },
    },
    "jev": {"defaults": {"hidden_size": 4096}},
    "jina_embeddings_v3": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "max_position_embeddings": 8194,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
            "tie_word_embeddings": True,
            "vocab_size": 250002,
        }
    },
    "kimi_k25_vision": {
        "defaults": {
            "hidden_size": 1152,
            "intermediate_size": 4304,
            "num_attention_heads": 16,
            "num_hidden_layers": 27,
        }
    },
    "kolibri1": {
        "aliases": {"num_experts": "num_local_experts"},
        "defaults": {
            "head_dim": 128,
            "hidden_size": 2560,
            "max_position_embeddings": 262144,
            "moe_intermediate_size": 512,
            "num_attention_heads": 48,
            "num_hidden_layers": 50,
            "num_key_value_heads": 4,
            "num_local_experts": 384,
            "shared_expert_intermediate_size": 512,
            "tie_word_embeddings": False,
            "vocab_size": 128000,
        },
    },
    "kosmos-2": {"defaults": {"tie_word_embeddings": True}, "text": "kosmos_2_text_model"},
    "kosmos-2.5": {"defaults": {"tie_word_embeddings": True}, "text": "kosmos_2_5_text_model"},
    "kosmos_2_5_text_model": {
        "aliases": {
            "hidden_size": "embed_dim",
            "num_attention_heads": "attention_heads",
            "num_hidden_layers": "layers",
        },
        "defaults": {
            "attention_heads": 16,
            "embed_dim": 1536,
            "layers": 24,
            "max_position_embeddings": 4096,
            "tie_word_embeddings": True,
            "vocab_size": 108481,
        },
    },
    "kosmos_2_5_vision_model": {
        "defaults": {
            "head_dim": 64,
            "hidden_size": 1536,
            "intermediate_size": 3968,
            "num_attention_heads": 24,
            "num_hidden_layers": 18,
        }
    },
    "kosmos_2_text_model": {
        "aliases": {
            "hidden_size": "embed_dim",
            "num_attention_heads": "attention_heads",
            "num_hidden_layers": "layers",
        },
        "defaults": {
            "attention_heads": 32,
            "embed_dim": 2048,
            "layers": 24,
            "max_position_embeddings": 2048,
            "tie_word_embeddings": True,
            "vocab_size": 65037,
        },
    },
    "kosmos_2_vision_model": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
        }
    },
    "kyutai_speech_to_text": {
        "defaults": {
            "hidden_size": 2048,
            "max_position_embeddings": 750,
            "num_attention_heads": 32,
            "num_hidden_layers": 48,
            "tie_word_embeddings": False,
            "vocab_size": 4001,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "laguna": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 2048,
            "intermediate_size": 8192,
            "max_position_embeddings": 131072,
            "moe_intermediate_size": 512,
            "num_attention_heads": 48,
            "num_experts": 256,
            "num_hidden_layers": 40,
            "num_key_value_heads": 8,
            "shared_expert_intermediate_size": 512,
            "tie_word_embeddings": False,
            "vocab_size": 100352,
        }
    },
    "lara_mini": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 1024,
            "max_position_embeddings": 131072,
            "moe_intermediate_size": 512,
            "num_attention_heads": 16,
            "num_experts": 128,
            "num_hidden_layers": 34,
            "num_key_value_heads": 4,
            "shared_expert_intermediate_size": 512,
            "tie_word_embeddings": True,
            "vocab_size": 151936,
        }
    },
    "lasr_ctc": {"defaults": {"vocab_size": 512}},
    "lasr_encoder": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "max_position_embeddings": 10000,
            "num_attention_heads": 8,
            "num_hidden_layers": 17,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "layoutlm": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "layoutlmv2": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 30522,
        }
    },
    "layoutlmv3": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 50265,
        }
    },
    "layoutxlm": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 30522,
        }
    },
    "led": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 1024,
            "encoder_attention_heads": 16,
            "encoder_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 50265,
        },
    },
    "levit": {"defaults": {"num_attention_heads": [4, 8, 12]}},
    "lfm2": {
        "defaults": {
            "hidden_size": 2560,
            "intermediate_size": 12288,
            "max_position_embeddings": 128000,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "tie_word_embeddings": True,
            "vocab_size": 65536,
        }
    },
    "lfm2_moe": {
        "defaults": {
            "hidden_size": 2048,
            "intermediate_size": 7168,
            "max_position_embeddings": 128000,
            "moe_intermediate_size": 1792,
            "num_attention_heads": 32,
            "num_experts": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "tie_word_embeddings": True,
            "vocab_size": 65536,
        }
    },
    "lfm2_vl": {"defaults": {"tie_word_embeddings": True}},
    "lfm3": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 2048,
            "intermediate_size": 7680,
            "max_position_embeddings": 128000,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
            "num_key_value_heads": 4,
            "tie_word_embeddings": True,
            "vocab_size": 128000,
        }
    },
    "lfm3_vl": {"defaults": {"tie_word_embeddings": True}},
    "lfm3_vl_vision": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 2560,
            "num_attention_heads": 16,
            "num_hidden_layers": 14,
            "num_key_value_heads": 8,
        }
    },
    "lightglue": {
        "defaults": {
            "hidden_size": 256,
            "intermediate_size": 512,
            "num_attention_heads": 4,
            "num_hidden_layers": 9,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "lighton_ocr": {"defaults": {"tie_word_embeddings": True}},
    "lilt": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 30522,
        }
    },
    "llama": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "llama4": {"defaults": {"tie_word_embeddings": False}, "text": "llama4_text"},
    "llama4_text": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 5120,
            "interleave_moe_layer_step": 1,
            "intermediate_size": 8192,
            "intermediate_size_mlp": 16384,
            "max_position_embeddings": 131072,
            "num_attention_heads": 40,
            "num_hidden_layers": 48,
            "num_key_value_heads": 8,
            "num_local_experts": 16,
            "tie_word_embeddings": False,
            "vocab_size": 202048,
        }
    },
    "llama4_vision_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 5632,
            "num_attention_heads": 16,
            "num_hidden_layers": 34,
        }
    },
    "llava": {"defaults": {"tie_word_embeddings": False}},
    "llava_next": {"defaults": {"tie_word_embeddings": False}},
    "llava_next_video": {"defaults": {"tie_word_embeddings": False}},
    "llava_onevision": {"defaults": {"tie_word_embeddings": False}},
    "longcat_flash": {
        "aliases": {
            "intermediate_size": "ffn_hidden_size",
            "moe_intermediate_size": "expert_ffn_hidden_size",
            "num_local_experts": "n_routed_experts",
        },
        "defaults": {
            "expert_ffn_hidden_size": 2048,
            "ffn_hidden_size": 12288,
            "head_dim": 64,
            "hidden_size": 6144,
            "kv_lora_rank": 512,
            "max_position_embeddings": 131072,
            "n_routed_experts": 512,
            "num_attention_heads": 64,
            "num_hidden_layers": 56,
            "q_lora_rank": 1536,
            "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64,
            "tie_word_embeddings": False,
            "v_head_dim": 128,
            "vocab_size": 131072,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "longformer": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "longt5": {
        "aliases": {
            "head_dim": "d_kv",
            "hidden_size": "d_model",
            "num_attention_heads": "num_heads",
            "num_hidden_layers": "num_layers",
        },
        "defaults": {
            "d_kv": 64,
            "d_model": 512,
            "num_heads": 8,
            "num_layers": 6,
            "tie_word_embeddings": True,
            "vocab_size": 32128,
        },
    },
    "luke": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 50267,
        }
    },
    "lw_detr": {},
    "lw_detr_vit": {
        "defaults": {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12}
    },
    "lxmert": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "m2m_100": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 1024,
            "encoder_attention_heads": 16,
            "encoder_layers": 12,
            "max_position_embeddings": 1024,
            "tie_word_embeddings": True,
            "vocab_size": 128112,
        },
    },
    "mamba": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 1536,
            "num_hidden_layers": 32,
            "tie_word_embeddings": True,
            "vocab_size": 50280,
        }
    },
    "mamba2": {
        "defaults": {
            "head_dim": 64,
            "hidden_size": 4096,
            "n_groups": 8,
            "num_heads": 128,
            "num_hidden_layers": 64,
            "tie_word_embeddings": False,
            "vocab_size": 32768,
        }
    },
    "marian": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 1024,
            "encoder_attention_heads": 16,
            "encoder_layers": 12,
            "max_position_embeddings": 1024,
            "tie_word_embeddings": True,
            "vocab_size": 58101,
        },
    },
    "markuplm": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 30522,
        }
    },
    "mask2former": {
        "aliases": {"hidden_size": "hidden_dim", "num_hidden_layers": "decoder_layers"},
        "defaults": {"decoder_layers": 10, "hidden_dim": 256, "num_attention_heads": 8},
    },
    "maskformer": {
        "aliases": {"hidden_size": "mask_feature_size"},
        "defaults": {"mask_feature_size": 256, "num_attention_heads": 8, "num_hidden_layers": 6},
    },
    "maskformer-swin": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "num_layers"},
        "defaults": {"hidden_size": 768, "num_heads": [3, 6, 12, 24]},
    },
    "mbart": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 1024,
            "encoder_attention_heads": 16,
            "encoder_layers": 12,
            "max_position_embeddings": 1024,
            "tie_word_embeddings": True,
            "vocab_size": 50265,
        },
    },
    "megatron-bert": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "max_position_embeddings": 512,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
            "tie_word_embeddings": True,
            "vocab_size": 29056,
        }
    },
    "mellum": {
        "aliases": {"num_experts": "num_local_experts"},
        "defaults": {
            "head_dim": 128,
            "hidden_size": 2304,
            "intermediate_size": 7168,
            "max_position_embeddings": 131072,
            "moe_intermediate_size": 896,
            "num_attention_heads": 32,
            "num_hidden_layers": 28,
            "num_key_value_heads": 4,
            "num_local_experts": 64,
            "tie_word_embeddings": False,
            "vocab_size": 98304,
        },
    },
    "metaclip_2": {"text": "metaclip_2_text_model"},
    "metaclip_2_text_model": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "max_position_embeddings": 77,
            "num_attention_heads": 8,
            "num_hidden_layers": 12,
            "vocab_size": 49408,
        }
    },
    "metaclip_2_vision_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "mgp-str": {
        "defaults": {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12}
    },
    "mimi": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "max_position_embeddings": 8000,
            "num_attention_heads": 8,
            "num_hidden_layers": 8,
            "num_key_value_heads": 8,
            "tie_word_embeddings": True,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "mimi_decoder": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "max_position_embeddings": 8000,
            "num_attention_heads": 8,
            "num_hidden_layers": 8,
            "num_key_value_heads": 8,
            "tie_word_embeddings": True,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "mimi_encoder": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "max_position_embeddings": 8000,
            "num_attention_heads": 8,
            "num_hidden_layers": 8,
            "num_key_value_heads": 8,
            "tie_word_embeddings": True,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "mimo_v2_flash": {
        "aliases": {"num_local_experts": "n_routed_experts"},
        "defaults": {
            "head_dim": 192,
            "hidden_size": 4096,
            "intermediate_size": 16384,
            "max_position_embeddings": 131072,
            "moe_intermediate_size": 2048,
            "n_routed_experts": 256,
            "num_attention_heads": 64,
            "num_hidden_layers": 48,
            "num_key_value_heads": 4,
            "tie_word_embeddings": False,
            "v_head_dim": 128,
            "vocab_size": 152576,
        },
    },
    "minicpm3": {
        "defaults": {
            "hidden_size": 2560,
            "intermediate_size": 6400,
            "kv_lora_rank": 256,
            "max_position_embeddings": 32768,
            "num_attention_heads": 40,
            "num_hidden_layers": 62,
            "num_key_value_heads": 40,
            "q_lora_rank": 768,
            "qk_nope_head_dim": 64,
            "qk_rope_head_dim": 32,
            "tie_word_embeddings": True,
            "v_head_dim": 64,
            "vocab_size": 73448,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "minicpm_ocr": {"defaults": {"tie_word_embeddings": True}},
    "minicpm_ocr_vision": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "minicpmv4_6": {"defaults": {"tie_word_embeddings": False}},
    "minicpmv4_6_vision": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "minicpmv4_7": {"defaults": {"tie_word_embeddings": False}},
    "minicpmv4_7_vision": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "minimax": {
        "aliases": {"num_experts": "num_local_experts"},
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "max_position_embeddings": 131072,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "num_local_experts": 8,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        },
    },
    "minimax_m2": {
        "aliases": {"num_experts": "num_local_experts"},
        "defaults": {
            "head_dim": 128,
            "hidden_size": 3072,
            "intermediate_size": 1536,
            "max_position_embeddings": 196608,
            "num_attention_heads": 48,
            "num_hidden_layers": 62,
            "num_key_value_heads": 8,
            "num_local_experts": 256,
            "tie_word_embeddings": False,
            "vocab_size": 200064,
        },
    },
    "minimax_m3_vl_text": {
        "aliases": {"num_experts": "num_local_experts"},
        "defaults": {
            "head_dim": 128,
            "hidden_size": 6144,
            "intermediate_size": 3072,
            "max_position_embeddings": 524288,
            "num_attention_heads": 64,
            "num_hidden_layers": 60,
            "num_key_value_heads": 4,
            "num_local_experts": 128,
            "tie_word_embeddings": False,
            "vocab_size": 200064,
        },
    },
    "minimax_m3_vl_vision": {
        "defaults": {
            "hidden_size": 1280,
            "intermediate_size": 5120,
            "num_attention_heads": 16,
            "num_hidden_layers": 32,
        }
    },
    "ministral": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "max_position_embeddings": 131072,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        }
    },
    "ministral3": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "max_position_embeddings": 262144,
            "num_attention_heads": 32,
            "num_hidden_layers": 34,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 131072,
        }
    },
    "mistral": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "max_position_embeddings": 131072,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "mistral3": {"defaults": {"tie_word_embeddings": True}},
    "mistral4": {
        "aliases": {"num_local_experts": "n_routed_experts"},
        "defaults": {
            "first_k_dense_replace": 0,
            "head_dim": 128,
            "hidden_size": 4096,
            "intermediate_size": 12288,
            "kv_lora_rank": 256,
            "max_position_embeddings": 1048576,
            "moe_intermediate_size": 2048,
            "n_routed_experts": 128,
            "n_shared_experts": 1,
            "num_attention_heads": 32,
            "num_hidden_layers": 36,
            "num_key_value_heads": 32,
            "q_lora_rank": 1024,
            "qk_nope_head_dim": 64,
            "qk_rope_head_dim": 64,
            "tie_word_embeddings": False,
            "v_head_dim": 128,
            "vocab_size": 131072,
        },
    },
    "mistral_large4": {"defaults": {"tie_word_embeddings": False}, "text": "mistral_large4_text"},
    "mistral_large4_text": {
        "aliases": {"num_local_experts": "n_routed_experts"},
        "defaults": {
            "first_k_dense_replace": 1,
            "head_dim": 64,
            "hidden_size": 6144,
            "intermediate_size": 24576,
            "kv_lora_rank": 512,
            "max_position_embeddings": 1048576,
            "moe_intermediate_size": 6144,
            "n_routed_experts": 128,
            "n_shared_experts": 1,
            "num_attention_heads": 64,
            "num_hidden_layers": 72,
            "num_key_value_heads": 64,
            "qk_nope_head_dim": 64,
            "qk_rope_head_dim": 64,
            "tie_word_embeddings": False,
            "v_head_dim": 128,
            "vocab_size": 204800,
        },
    },
    "mixtral": {
        "aliases": {"num_experts": "num_local_experts"},
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "max_position_embeddings": 131072,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "num_local_experts": 8,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        },
    },
    "mlcd": {
        "defaults": {
            "hidden_size": 1664,
            "intermediate_size": 8192,
            "num_attention_heads": 16,
            "num_hidden_layers": 48,
        }
    },
    "mlcd_vision_model": {
        "defaults": {
            "hidden_size": 1664,
            "intermediate_size": 8192,
            "num_attention_heads": 16,
            "num_hidden_layers": 48,
        }
    },
    "mllama": {"text": "mllama_text_model"},
    "mllama_text_model": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "max_position_embeddings": 131072,
            "num_attention_heads": 32,
            "num_hidden_layers": 40,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 128256,
        }
    },
    "mllama_vision_model": {
        "aliases": {"num_attention_heads": "attention_heads"},
        "defaults": {
            "attention_heads": 16,
            "hidden_size": 1280,
            "intermediate_size": 5120,
            "num_hidden_layers": 32,
        },
    },
    "mm-grounding-dino": {
        "aliases": {"hidden_size": "d_model", "num_attention_heads": "encoder_attention_heads"},
        "defaults": {"d_model": 256, "encoder_attention_heads": 8, "tie_word_embeddings": True},
    },
    "mobilebert": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 512,
            "max_position_embeddings": 512,
            "num_attention_heads": 4,
            "num_hidden_layers": 24,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "mobilenet_v1": {},
    "mobilenet_v2": {},
    "mobilevit": {"defaults": {"num_attention_heads": 4}},
    "mobilevitv2": {},
    "modernbert": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 1152,
            "max_position_embeddings": 8192,
            "num_attention_heads": 12,
            "num_hidden_layers": 22,
            "tie_word_embeddings": True,
            "vocab_size": 50368,
        }
    },
    "modernbert-decoder": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 1152,
            "max_position_embeddings": 8192,
            "num_attention_heads": 12,
            "num_hidden_layers": 22,
            "tie_word_embeddings": True,
            "vocab_size": 50368,
        }
    },
    "modernvbert": {"defaults": {"tie_word_embeddings": False}},
    "molmo2": {"defaults": {"tie_word_embeddings": False}, "text": "molmo2_text"},
    "molmo2_adapter": {
        "defaults": {
            "head_dim": 72,
            "hidden_size": 1152,
            "intermediate_size": 18944,
            "num_attention_heads": 16,
            "num_key_value_heads": 16,
        }
    },
    "molmo2_text": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 4096,
            "intermediate_size": 12288,
            "max_position_embeddings": 36864,
            "num_attention_heads": 32,
            "num_hidden_layers": 36,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 151936,
        }
    },
    "molmo2_vision": {
        "defaults": {
            "head_dim": 72,
            "hidden_size": 1152,
            "intermediate_size": 4304,
            "num_attention_heads": 16,
            "num_hidden_layers": 25,
            "num_key_value_heads": 16,
        }
    },
    "moonshine": {
        "aliases": {
            "num_attention_heads": "decoder_num_attention_heads",
            "num_hidden_layers": "decoder_num_hidden_layers",
            "num_key_value_heads": "decoder_num_key_value_heads",
        },
        "defaults": {
            "decoder_num_attention_heads": 8,
            "decoder_num_hidden_layers": 6,
            "decoder_num_key_value_heads": 8,
            "hidden_size": 288,
            "intermediate_size": 1152,
            "max_position_embeddings": 512,
            "tie_word_embeddings": True,
            "vocab_size": 32768,
        },
    },
    "moonshine_streaming": {
        "defaults": {
            "hidden_size": 320,
            "intermediate_size": 1280,
            "max_position_embeddings": 4096,
            "num_attention_heads": 8,
            "num_hidden_layers": 6,
            "tie_word_embeddings": False,
            "vocab_size": 32768,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "moonshine_streaming_encoder": {
        "defaults": {
            "hidden_size": 320,
            "intermediate_size": 1280,
            "max_position_embeddings": 4096,
            "num_attention_heads": 8,
            "num_hidden_layers": 6,
            "num_key_value_heads": 8,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "moshi": {
        "defaults": {
            "hidden_size": 4096,
            "max_position_embeddings": 3000,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "moshi_depth": {
        "defaults": {
            "hidden_size": 1024,
            "max_position_embeddings": 9,
            "num_attention_heads": 16,
            "num_hidden_layers": 6,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "moss_transcribe_diarize_audio": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
        }
    },
    "mpnet": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30527,
        }
    },
    "mpt": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "n_heads",
            "num_hidden_layers": "n_layers",
        },
        "defaults": {
            "d_model": 2048,
            "max_seq_len": 2048,
            "n_heads": 16,
            "n_layers": 24,
            "tie_word_embeddings": True,
            "vocab_size": 50368,
        },
    },
    "mra": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 50265,
        }
    },
    "mt5": {
        "aliases": {
            "head_dim": "d_kv",
            "hidden_size": "d_model",
            "num_attention_heads": "num_heads",
            "num_hidden_layers": "num_layers",
        },
        "defaults": {
            "d_kv": 64,
            "d_model": 512,
            "num_heads": 6,
            "num_layers": 8,
            "tie_word_embeddings": True,
            "vocab_size": 250112,
        },
    },
    "muse_glimmer": {"text": "muse_glimmer_text"},
    "muse_glimmer_assistant": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 6656,
            "intermediate_size": 19968,
            "max_position_embeddings": 131072,
            "num_attention_heads": 32,
            "num_hidden_layers": 5,
            "num_key_value_heads": 8,
        }
    },
    "muse_glimmer_text": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 6656,
            "intermediate_size": 19968,
            "max_position_embeddings": 131072,
            "num_attention_heads": 32,
            "num_hidden_layers": 52,
            "num_key_value_heads": 2,
            "tie_word_embeddings": False,
            "vocab_size": 202048,
        }
    },
    "muse_glimmer_vision": {
        "defaults": {
            "hidden_size": 1536,
            "intermediate_size": 8960,
            "max_position_embeddings": 1024,
            "num_attention_heads": 16,
            "num_hidden_layers": 50,
        }
    },
    "musicflamingo": {"defaults": {"head_dim": 1280, "max_position_embeddings": 1200.0}},
    "musicgen": {},
    "musicgen_decoder": {
        "defaults": {
            "hidden_size": 1024,
            "max_position_embeddings": 2048,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
            "tie_word_embeddings": False,
            "vocab_size": 2048,
        }
    },
    "musicgen_melody": {},
    "musicgen_melody_decoder": {
        "defaults": {
            "hidden_size": 1024,
            "max_position_embeddings": 2048,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
            "tie_word_embeddings": False,
            "vocab_size": 2048,
        }
    },
    "mvp": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 1024,
            "encoder_attention_heads": 16,
            "encoder_layers": 12,
            "max_position_embeddings": 1024,
            "tie_word_embeddings": True,
            "vocab_size": 50267,
        },
    },
    "nanochat": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 8192,
            "max_position_embeddings": 2048,
            "num_attention_heads": 6,
            "num_hidden_layers": 12,
            "tie_word_embeddings": False,
            "vocab_size": 50304,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "nemo_speechlm": {},
    "nemotron": {
        "defaults": {
            "hidden_size": 6144,
            "intermediate_size": 24576,
            "max_position_embeddings": 4096,
            "num_attention_heads": 48,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 256000,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "nemotron3_5_asr": {"defaults": {"vocab_size": 13088}},
    "nemotron3_5_transcribe_asr_audio": {
        "defaults": {
            "hidden_size": 1280,
            "intermediate_size": 5120,
            "max_position_embeddings": 5000,
            "num_attention_heads": 10,
            "num_hidden_layers": 32,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "nemotron3_5_transcribe_audio": {"defaults": {"hidden_size": 1280}},
    "nemotron3_5_transcribe_word_timestamp": {
        "defaults": {
            "hidden_size": 1280,
            "intermediate_size": 640,
            "max_position_embeddings": 5000,
            "num_attention_heads": 16,
            "num_hidden_layers": 2,
            "vocab_size": 23863,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "nemotron3_diarization": {},
    "nemotron3_diarization_audio": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "max_position_embeddings": 5000,
            "num_attention_heads": 8,
            "num_hidden_layers": 31,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "nemotron_asr_streaming": {"defaults": {"vocab_size": 1025}},
    "nemotron_asr_streaming_encoder": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "max_position_embeddings": 5000,
            "num_attention_heads": 8,
            "num_hidden_layers": 24,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "nemotron_h": {
        "aliases": {"num_local_experts": "n_routed_experts"},
        "defaults": {
            "head_dim": 128,
            "hidden_size": 4096,
            "intermediate_size": 21504,
            "mamba_num_heads": 128,
            "max_position_embeddings": 4096,
            "moe_intermediate_size": 7688,
            "n_groups": 8,
            "n_routed_experts": 8,
            "n_shared_experts": 1,
            "num_attention_heads": 32,
            "num_hidden_layers": 4,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 131072,
        },
    },
    "nemotron_h_omni": {},
    "neomme": {
        "defaults": {
            "head_dim": 64,
            "hidden_size": 1024,
            "intermediate_size": 3584,
            "max_position_embeddings": 16384,
            "num_attention_heads": 16,
            "num_hidden_layers": 17,
            "num_key_value_heads": 4,
            "tie_word_embeddings": True,
            "vocab_size": 131072,
        }
    },
    "neucodec": {
        "defaults": {
            "head_dim": 64,
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "max_position_embeddings": 4096,
            "num_attention_heads": 16,
            "num_hidden_layers": 12,
            "num_key_value_heads": 16,
            "tie_word_embeddings": False,
        }
    },
    "nllb-moe": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 1024,
            "decoder_sparse_step": 4,
            "encoder_attention_heads": 16,
            "encoder_layers": 12,
            "max_position_embeddings": 1024,
            "num_experts": 128,
            "tie_word_embeddings": True,
            "vocab_size": 128112,
        },
    },
    "nomic_bert": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 2048,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30528,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "nystromformer": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 510,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30000,
        }
    },
    "olmo": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 50304,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "olmo2": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 50304,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "olmo3": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 50304,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "olmo_hybrid": {
        "defaults": {
            "hidden_size": 3840,
            "intermediate_size": 11008,
            "max_position_embeddings": 65536,
            "num_attention_heads": 30,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 100352,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "olmoe": {
        "aliases": {"num_local_experts": "num_experts"},
        "defaults": {
            "hidden_size": 2048,
            "intermediate_size": 2048,
            "max_position_embeddings": 4096,
            "num_attention_heads": 16,
            "num_experts": 64,
            "num_hidden_layers": 16,
            "tie_word_embeddings": False,
            "vocab_size": 50304,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "omdet-turbo": {
        "aliases": {"num_attention_heads": "encoder_attention_heads"},
        "defaults": {"encoder_attention_heads": 8},
    },
    "omniasr": {},
    "omniasr_audio": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
        }
    },
    "omniasr_ctc": {"defaults": {"vocab_size": 10288}},
    "oneformer": {
        "aliases": {"hidden_size": "hidden_dim", "num_hidden_layers": "decoder_layers"},
        "defaults": {"decoder_layers": 10, "hidden_dim": 256, "num_attention_heads": 8},
    },
    "openai-gpt": {
        "aliases": {
            "hidden_size": "n_embd",
            "max_position_embeddings": "n_positions",
            "num_attention_heads": "n_head",
            "num_hidden_layers": "n_layer",
        },
        "defaults": {
            "n_embd": 768,
            "n_head": 12,
            "n_layer": 12,
            "n_positions": 512,
            "tie_word_embeddings": True,
            "vocab_size": 40478,
        },
    },
    "openai_privacy_filter": {
        "aliases": {"num_experts": "num_local_experts"},
        "defaults": {
            "head_dim": 64,
            "hidden_size": 640,
            "intermediate_size": 640,
            "max_position_embeddings": 131072,
            "num_attention_heads": 14,
            "num_hidden_layers": 8,
            "num_key_value_heads": 2,
            "num_local_experts": 128,
            "tie_word_embeddings": False,
            "vocab_size": 200064,
        },
    },
    "opt": {
        "defaults": {
            "hidden_size": 768,
            "max_position_embeddings": 2048,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 50272,
        }
    },
    "ovis2": {"defaults": {"hidden_size": 1536, "tie_word_embeddings": True, "vocab_size": 151643}},
    "ovis2_vision": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 2816,
            "num_attention_heads": 8,
            "num_hidden_layers": 24,
            "vocab_size": 16384,
        }
    },
    "owlv2": {"text": "owlv2_text_model"},
    "owlv2_text_model": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "max_position_embeddings": 16,
            "num_attention_heads": 8,
            "num_hidden_layers": 12,
            "vocab_size": 49408,
        }
    },
    "owlv2_vision_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "owlvit": {"text": "owlvit_text_model"},
    "owlvit_text_model": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "max_position_embeddings": 16,
            "num_attention_heads": 8,
            "num_hidden_layers": 12,
            "vocab_size": 49408,
        }
    },
    "owlvit_vision_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "paddleocr_vl": {"defaults": {"tie_word_embeddings": True}, "text": "paddleocr_vl_text"},
    "paddleocr_vl_text": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 1024,
            "intermediate_size": 3072,
            "max_position_embeddings": 131072,
            "num_attention_heads": 16,
            "num_hidden_layers": 18,
            "num_key_value_heads": 2,
            "tie_word_embeddings": True,
            "vocab_size": 103424,
        }
    },
    "paddleocr_vl_vision": {
        "defaults": {
            "hidden_size": 1152,
            "intermediate_size": 4304,
            "num_attention_heads": 16,
            "num_hidden_layers": 27,
        }
    },
    "paligemma": {
        "defaults": {"hidden_size": 2048, "tie_word_embeddings": True, "vocab_size": 257152}
    },
    "parakeet_ctc": {"defaults": {"vocab_size": 1025}},
    "parakeet_encoder": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "max_position_embeddings": 5000,
            "num_attention_heads": 8,
            "num_hidden_layers": 24,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "parakeet_rnnt": {"defaults": {"vocab_size": 8193}},
    "parakeet_tdt": {"defaults": {"vocab_size": 8193}},
    "patchtsmixer": {
        "aliases": {"hidden_size": "d_model", "num_hidden_layers": "num_layers"},
        "defaults": {"d_model": 8, "num_layers": 3},
    },
    "patchtst": {
        "aliases": {"hidden_size": "d_model"},
        "defaults": {"d_model": 128, "num_attention_heads": 4, "num_hidden_layers": 3},
    },
    "pe_audio": {},
    "pe_audio_encoder": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 1792,
            "intermediate_size": 4800,
            "max_position_embeddings": 10000,
            "num_attention_heads": 14,
            "num_hidden_layers": 6,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "pe_audio_video": {"defaults": {"tie_word_embeddings": True}},
    "pe_audio_video_encoder": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 1792,
            "intermediate_size": 4800,
            "max_position_embeddings": 10000,
            "num_attention_heads": 14,
            "num_hidden_layers": 6,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "pe_video": {},
    "pe_video_encoder": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 1792,
            "intermediate_size": 4800,
            "max_position_embeddings": 10000,
            "num_attention_heads": 14,
            "num_hidden_layers": 6,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "pegasus": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 1024,
            "encoder_attention_heads": 16,
            "encoder_layers": 12,
            "max_position_embeddings": 1024,
            "tie_word_embeddings": True,
            "vocab_size": 50265,
        },
    },
    "pegasus_x": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 1024,
            "encoder_attention_heads": 16,
            "encoder_layers": 16,
            "max_position_embeddings": 16384,
            "tie_word_embeddings": True,
            "vocab_size": 96103,
        },
    },
    "perceiver": {"defaults": {"max_position_embeddings": 2048, "vocab_size": 262}},
    "perception_lm": {"defaults": {"tie_word_embeddings": False}},
    "persimmon": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 16384,
            "max_position_embeddings": 16384,
            "num_attention_heads": 64,
            "num_hidden_layers": 36,
            "tie_word_embeddings": False,
            "vocab_size": 262144,
        }
    },
    "phi": {
        "defaults": {
            "hidden_size": 2048,
            "intermediate_size": 8192,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 24,
            "tie_word_embeddings": False,
            "vocab_size": 51200,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "phi3": {
        "defaults": {
            "hidden_size": 3072,
            "intermediate_size": 8192,
            "max_position_embeddings": 4096,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 32064,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "phi4_multimodal": {
        "defaults": {
            "hidden_size": 3072,
            "intermediate_size": 8192,
            "max_position_embeddings": 131072,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 200064,
        }
    },
    "phi4_multimodal_audio": {
        "defaults": {"hidden_size": 1024, "intermediate_size": 1536, "num_attention_heads": 16}
    },
    "phi4_multimodal_vision": {
        "defaults": {
            "hidden_size": 1152,
            "intermediate_size": 4304,
            "num_attention_heads": 16,
            "num_hidden_layers": 27,
        }
    },
    "phimoe": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 6400,
            "max_position_embeddings": 131072,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "num_local_experts": 16,
            "tie_word_embeddings": False,
            "vocab_size": 32064,
        }
    },
    "pi0": {},
    "pix2struct": {"defaults": {"tie_word_embeddings": False}, "text": "pix2struct_text_model"},
    "pix2struct_text_model": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "num_layers"},
        "defaults": {
            "hidden_size": 768,
            "num_heads": 12,
            "num_layers": 12,
            "tie_word_embeddings": False,
            "vocab_size": 50244,
        },
    },
    "pix2struct_vision_model": {
        "defaults": {
            "hidden_size": 768,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "seq_len": 4096,
        }
    },
    "pixio": {
        "defaults": {"hidden_size": 1280, "num_attention_heads": 16, "num_hidden_layers": 32}
    },
    "pixtral": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "plbart": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 768,
            "encoder_attention_heads": 12,
            "encoder_layers": 6,
            "max_position_embeddings": 1024,
            "tie_word_embeddings": True,
            "vocab_size": 50005,
        },
    },
    "pocket_tts": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "max_position_embeddings": 8192,
            "num_attention_heads": 16,
            "num_hidden_layers": 6,
            "vocab_size": 4004,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "pocket_tts_audio_tokenizer": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "max_position_embeddings": 8000,
            "num_attention_heads": 8,
            "num_hidden_layers": 2,
            "num_key_value_heads": 8,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "pocket_tts_audio_tokenizer_decoder": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "max_position_embeddings": 8000,
            "num_attention_heads": 8,
            "num_hidden_layers": 2,
            "num_key_value_heads": 8,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "pocket_tts_audio_tokenizer_encoder": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "max_position_embeddings": 8000,
            "num_attention_heads": 8,
            "num_hidden_layers": 2,
            "num_key_value_heads": 8,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "poolformer": {},
    "pop2piano": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "num_heads",
            "num_hidden_layers": "num_layers",
        },
        "defaults": {
            "d_model": 512,
            "num_heads": 8,
            "num_layers": 6,
            "tie_word_embeddings": True,
            "vocab_size": 2400,
        },
    },
    "pp_chart2table": {"defaults": {"tie_word_embeddings": True}},
    "pp_chart2table_vision": {
        "defaults": {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12}
    },
    "pp_doclayout_v2": {
        "aliases": {"hidden_size": "d_model", "num_attention_heads": "encoder_attention_heads"},
        "defaults": {"d_model": 256, "encoder_attention_heads": 8},
    },
    "pp_doclayout_v3": {
        "aliases": {"hidden_size": "d_model", "num_attention_heads": "encoder_attention_heads"},
        "defaults": {"d_model": 256, "encoder_attention_heads": 8, "tie_word_embeddings": True},
    },
    "pp_doclayout_v4": {
        "aliases": {"num_attention_heads": "encoder_attention_heads"},
        "defaults": {"encoder_attention_heads": 8, "hidden_size": 256, "tie_word_embeddings": True},
    },
    "pp_formulanet": {"text": "pp_formulanet_text"},
    "pp_formulanet_text": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 512,
            "encoder_attention_heads": 16,
            "encoder_layers": 12,
            "max_position_embeddings": 2560,
            "tie_word_embeddings": False,
            "vocab_size": 50000,
        },
    },
    "pp_formulanet_vision": {
        "defaults": {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12}
    },
    "pp_lcnet": {},
    "pp_lcnet_v3": {},
    "pp_lcnet_v4": {},
    "pp_ocrv5_mobile_det": {},
    "pp_ocrv5_mobile_rec": {
        "aliases": {"num_hidden_layers": "depth"},
        "defaults": {"depth": 2, "hidden_size": 120, "num_attention_heads": 8},
    },
    "pp_ocrv5_server_det": {},
    "pp_ocrv5_server_rec": {
        "aliases": {"num_hidden_layers": "depth"},
        "defaults": {"depth": 2, "hidden_size": 120, "num_attention_heads": 8},
    },
    "pp_ocrv6_medium_det": {},
    "pp_ocrv6_small_det": {},
    "pp_ocrv6_small_rec": {
        "aliases": {"num_hidden_layers": "depth"},
        "defaults": {"depth": 2, "hidden_size": 120, "num_attention_heads": 8},
    },
    "pp_ocrv6_tiny_rec": {
        "aliases": {"num_hidden_layers": "depth"},
        "defaults": {"hidden_size": 120},
    },
    "prompt_depth_anything": {},
    "prophetnet": {
        "aliases": {"num_attention_heads": "num_encoder_attention_heads"},
        "defaults": {
            "hidden_size": 1024,
            "max_position_embeddings": 512,
            "num_encoder_attention_heads": 16,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        },
    },
    "pvt": {"defaults": {"num_attention_heads": [1, 2, 5, 8]}},
    "pvt_v2": {"defaults": {"num_attention_heads": [1, 2, 5, 8]}},
    "qianfan_ocr": {"defaults": {"tie_word_embeddings": False}},
    "qianfan_ocr_vision": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
        }
    },
    "qwen2": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 22016,
            "max_position_embeddings": 32768,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 32,
            "tie_word_embeddings": False,
            "vocab_size": 151936,
        }
    },
    "qwen2_5_omni": {},
    "qwen2_5_omni_audio_encoder": {
        "aliases": {
            "hidden_size": "d_model",
            "intermediate_size": "encoder_ffn_dim",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 1280,
            "encoder_attention_heads": 20,
            "encoder_ffn_dim": 5120,
            "encoder_layers": 32,
        },
    },
    "qwen2_5_omni_bigvgan": {},
    "qwen2_5_omni_dit": {
        "defaults": {
            "head_dim": 64,
            "hidden_size": 1024,
            "max_position_embeddings": 32768,
            "num_attention_heads": 16,
            "num_hidden_layers": 22,
        }
    },
    "qwen2_5_omni_talker": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 3584,
            "intermediate_size": 18944,
            "max_position_embeddings": 32768,
            "num_attention_heads": 28,
            "num_hidden_layers": 28,
            "num_key_value_heads": 4,
            "tie_word_embeddings": False,
            "vocab_size": 8448,
        }
    },
    "qwen2_5_omni_text": {
        "defaults": {
            "hidden_size": 3584,
            "intermediate_size": 18944,
            "max_position_embeddings": 32768,
            "num_attention_heads": 28,
            "num_hidden_layers": 28,
            "num_key_value_heads": 4,
            "tie_word_embeddings": True,
            "vocab_size": 152064,
        }
    },
    "qwen2_5_omni_thinker": {
        "defaults": {"tie_word_embeddings": False},
        "text": "qwen2_5_omni_text",
    },
    "qwen2_5_omni_token2wav": {},
    "qwen2_5_omni_vision_encoder": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
        "defaults": {"depth": 32, "hidden_size": 3584, "intermediate_size": 3420, "num_heads": 16},
    },
    "qwen2_5_vl": {"defaults": {"tie_word_embeddings": False}, "text": "qwen2_5_vl_text"},
    "qwen2_5_vl_text": {
        "defaults": {
            "hidden_size": 8192,
            "intermediate_size": 29568,
            "max_position_embeddings": 32768,
            "num_attention_heads": 64,
            "num_hidden_layers": 80,
            "num_key_value_heads": 8,
            "vocab_size": 152064,
        }
    },
    "qwen2_5_vl_vision": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
        "defaults": {"depth": 32, "hidden_size": 3584, "intermediate_size": 3420, "num_heads": 16},
    },
    "qwen2_audio": {},
    "qwen2_audio_encoder": {
        "aliases": {
            "hidden_size": "d_model",
            "intermediate_size": "encoder_ffn_dim",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 1280,
            "encoder_attention_heads": 20,
            "encoder_ffn_dim": 5120,
            "encoder_layers": 32,
        },
    },
    "qwen2_moe": {
        "defaults": {
            "decoder_sparse_step": 1,
            "hidden_size": 2048,
            "intermediate_size": 5632,
            "max_position_embeddings": 32768,
            "mlp_only_layers": [],
            "moe_intermediate_size": 1408,
            "num_attention_heads": 16,
            "num_experts": 60,
            "num_hidden_layers": 24,
            "num_key_value_heads": 16,
            "shared_expert_intermediate_size": 5632,
            "tie_word_embeddings": False,
            "vocab_size": 151936,
        }
    },
    "qwen2_vl": {"defaults": {"tie_word_embeddings": False}, "text": "qwen2_vl_text"},
    "qwen2_vl_text": {
        "defaults": {
            "hidden_size": 8192,
            "intermediate_size": 29568,
            "max_position_embeddings": 32768,
            "num_attention_heads": 64,
            "num_hidden_layers": 80,
            "num_key_value_heads": 8,
            "vocab_size": 152064,
        }
    },
    "qwen2_vl_vision": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
        "defaults": {"depth": 32, "hidden_size": 3584, "num_heads": 16},
    },
    "qwen3": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 4096,
            "intermediate_size": 22016,
            "max_position_embeddings": 32768,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 32,
            "tie_word_embeddings": False,
            "vocab_size": 151936,
        }
    },
    "qwen3_5": {"defaults": {"tie_word_embeddings": False}, "text": "qwen3_5_text"},
    "qwen3_5_moe": {"defaults": {"tie_word_embeddings": False}, "text": "qwen3_5_moe_text"},
    "qwen3_5_moe_text": {
        "defaults": {
            "head_dim": 256,
            "hidden_size": 2048,
            "max_position_embeddings": 32768,
            "moe_intermediate_size": 512,
            "num_attention_heads": 16,
            "num_experts": 256,
            "num_hidden_layers": 40,
            "num_key_value_heads": 2,
            "shared_expert_intermediate_size": 512,
            "tie_word_embeddings": False,
            "vocab_size": 248320,
        }
    },
    "qwen3_5_moe_vision": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
        "defaults": {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "num_heads": 16},
    },
    "qwen3_5_text": {
        "defaults": {
            "head_dim": 256,
            "hidden_size": 4096,
            "intermediate_size": 12288,
            "max_position_embeddings": 32768,
            "num_attention_heads": 16,
            "num_hidden_layers": 32,
            "num_key_value_heads": 4,
            "tie_word_embeddings": False,
            "vocab_size": 248320,
        }
    },
    "qwen3_5_vision": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
        "defaults": {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "num_heads": 16},
    },
    "qwen3_asr_encoder": {
        "aliases": {
            "hidden_size": "d_model",
            "intermediate_size": "encoder_ffn_dim",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 1024,
            "encoder_attention_heads": 16,
            "encoder_ffn_dim": 4096,
            "encoder_layers": 24,
            "max_position_embeddings": 13,
        },
    },
    "qwen3_moe": {
        "aliases": {"num_experts": "num_local_experts"},
        "defaults": {
            "decoder_sparse_step": 1,
            "hidden_size": 2048,
            "intermediate_size": 6144,
            "max_position_embeddings": 32768,
            "mlp_only_layers": [],
            "moe_intermediate_size": 768,
            "num_attention_heads": 32,
            "num_hidden_layers": 24,
            "num_key_value_heads": 4,
            "num_local_experts": 128,
            "tie_word_embeddings": False,
            "vocab_size": 151936,
        },
    },
    "qwen3_next": {
        "defaults": {
            "decoder_sparse_step": 1,
            "head_dim": 256,
            "hidden_size": 2048,
            "intermediate_size": 5632,
            "max_position_embeddings": 32768,
            "mlp_only_layers": [],
            "moe_intermediate_size": 512,
            "num_attention_heads": 16,
            "num_experts": 512,
            "num_hidden_layers": 48,
            "num_key_value_heads": 2,
            "shared_expert_intermediate_size": 512,
            "tie_word_embeddings": False,
            "vocab_size": 151936,
        }
    },
    "qwen3_omni_moe": {},
    "qwen3_omni_moe_audio_encoder": {
        "aliases": {
            "hidden_size": "d_model",
            "intermediate_size": "encoder_ffn_dim",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 1280,
            "encoder_attention_heads": 20,
            "encoder_ffn_dim": 5120,
            "encoder_layers": 32,
        },
    },
    "qwen3_omni_moe_talker_code_predictor": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 1024,
            "intermediate_size": 3072,
            "max_position_embeddings": 32768,
            "num_attention_heads": 16,
            "num_hidden_layers": 5,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 2048,
        }
    },
    "qwen3_omni_moe_talker_text": {
        "aliases": {"num_experts": "num_local_experts"},
        "defaults": {
            "decoder_sparse_step": 1,
            "hidden_size": 1024,
            "intermediate_size": 2048,
            "max_position_embeddings": 32768,
            "mlp_only_layers": [],
            "moe_intermediate_size": 384,
            "num_attention_heads": 16,
            "num_hidden_layers": 20,
            "num_key_value_heads": 2,
            "num_local_experts": 128,
            "tie_word_embeddings": False,
            "vocab_size": 3072,
        },
    },
    "qwen3_omni_moe_text": {
        "defaults": {
            "decoder_sparse_step": 1,
            "hidden_size": 2048,
            "intermediate_size": 18944,
            "max_position_embeddings": 32768,
            "mlp_only_layers": [],
            "moe_intermediate_size": 768,
            "num_attention_heads": 28,
            "num_experts": 128,
            "num_hidden_layers": 28,
            "num_key_value_heads": 4,
            "vocab_size": 3584,
        }
    },
    "qwen3_omni_moe_thinker": {
        "defaults": {"tie_word_embeddings": False},
        "text": "qwen3_omni_moe_text",
    },
    "qwen3_omni_moe_vision_encoder": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
        "defaults": {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "num_heads": 16},
    },
    "qwen3_vl": {"defaults": {"tie_word_embeddings": False}, "text": "qwen3_vl_text"},
    "qwen3_vl_moe": {"defaults": {"tie_word_embeddings": False}, "text": "qwen3_vl_moe_text"},
    "qwen3_vl_moe_text": {
        "aliases": {"num_experts": "num_local_experts"},
        "defaults": {
            "decoder_sparse_step": 1,
            "hidden_size": 2048,
            "intermediate_size": 5632,
            "max_position_embeddings": 128000,
            "mlp_only_layers": [],
            "moe_intermediate_size": 1408,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
            "num_key_value_heads": 16,
            "num_local_experts": 60,
            "tie_word_embeddings": True,
            "vocab_size": 151936,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "qwen3_vl_moe_vision": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
        "defaults": {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "num_heads": 16},
    },
    "qwen3_vl_text": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 4096,
            "intermediate_size": 22016,
            "max_position_embeddings": 128000,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 32,
            "vocab_size": 151936,
        }
    },
    "qwen3_vl_vision": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
        "defaults": {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "num_heads": 16},
    },
    "qwen4_exp": {"defaults": {"tie_word_embeddings": False}, "text": "qwen4_exp_text"},
    "qwen4_exp_text": {
        "defaults": {
            "head_dim": 256,
            "hidden_size": 2048,
            "max_position_embeddings": 32768,
            "moe_intermediate_size": 512,
            "num_attention_heads": 16,
            "num_experts": 512,
            "num_hidden_layers": 40,
            "num_key_value_heads": 2,
            "shared_expert_intermediate_size": 512,
            "tie_word_embeddings": False,
            "vocab_size": 248320,
        }
    },
    "qwen4_exp_vision": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
        "defaults": {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "num_heads": 16},
    },
    "radio": {
        "defaults": {"hidden_size": 1280, "num_attention_heads": 16, "num_hidden_layers": 32}
    },
    "rag": {},
    "recurrent_gemma": {
        "defaults": {
            "hidden_size": 2560,
            "intermediate_size": 7680,
            "num_attention_heads": 10,
            "num_hidden_layers": 26,
            "tie_word_embeddings": True,
            "vocab_size": 256000,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "reformer": {
        "defaults": {
            "hidden_size": 256,
            "max_position_embeddings": 4096,
            "num_attention_heads": 12,
            "num_hidden_layers": 6,
            "tie_word_embeddings": False,
            "vocab_size": 320,
        }
    },
    "regnet": {},
    "rembert": {
        "defaults": {
            "hidden_size": 1152,
            "intermediate_size": 4608,
            "max_position_embeddings": 512,
            "num_attention_heads": 18,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 250300,
        }
    },
    "resnet": {},
    "rf_detr": {"defaults": {"intermediate_size": 1024}},
    "rf_detr_dinov2": {
        "defaults": {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12}
    },
    "roberta": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 50265,
        }
    },
    "roberta-prelayernorm": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 50265,
        }
    },
    "roc_bert": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "roformer": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 1536,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 50000,
        }
    },
    "rt_detr": {
        "aliases": {"hidden_size": "d_model", "num_attention_heads": "encoder_attention_heads"},
        "defaults": {"d_model": 256, "encoder_attention_heads": 8},
    },
    "rt_detr_resnet": {},
    "rt_detr_v2": {
        "aliases": {"hidden_size": "d_model", "num_attention_heads": "encoder_attention_heads"},
        "defaults": {"d_model": 256, "encoder_attention_heads": 8, "tie_word_embeddings": True},
    },
    "rwkv": {
        "aliases": {"max_position_embeddings": "context_length"},
        "defaults": {
            "context_length": 1024,
            "hidden_size": 4096,
            "intermediate_size": 16384,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 50277,
        },
    },
    "sam": {"defaults": {"tie_word_embeddings": True}},
    "sam2": {},
    "sam2_hiera_det_model": {"defaults": {"hidden_size": 96, "num_attention_heads": 1}},
    "sam2_mask_decoder": {
        "defaults": {"hidden_size": 256, "num_attention_heads": 8, "num_hidden_layers": 2}
    },
    "sam2_prompt_encoder": {"defaults": {"hidden_size": 256}},
    "sam2_video": {},
    "sam2_video_mask_decoder": {
        "defaults": {"hidden_size": 256, "num_attention_heads": 8, "num_hidden_layers": 2}
    },
    "sam2_video_prompt_encoder": {"defaults": {"hidden_size": 256}},
    "sam2_vision_model": {},
    "sam3": {},
    "sam3_detr_decoder": {
        "aliases": {"num_hidden_layers": "num_layers"},
        "defaults": {
            "hidden_size": 256,
            "intermediate_size": 2048,
            "num_attention_heads": 8,
            "num_layers": 6,
        },
    },
    "sam3_detr_encoder": {
        "aliases": {"num_hidden_layers": "num_layers"},
        "defaults": {
            "hidden_size": 256,
            "intermediate_size": 2048,
            "num_attention_heads": 8,
            "num_layers": 6,
        },
    },
    "sam3_geometry_encoder": {
        "defaults": {"hidden_size": 256, "intermediate_size": 2048, "num_attention_heads": 8}
    },
    "sam3_lite_text": {"text": "sam3_lite_text_text_model"},
    "sam3_lite_text_detr_decoder": {
        "aliases": {"num_hidden_layers": "num_layers"},
        "defaults": {
            "hidden_size": 256,
            "intermediate_size": 2048,
            "num_attention_heads": 8,
            "num_layers": 6,
        },
    },
    "sam3_lite_text_detr_encoder": {
        "aliases": {"num_hidden_layers": "num_layers"},
        "defaults": {
            "hidden_size": 256,
            "intermediate_size": 2048,
            "num_attention_heads": 8,
            "num_layers": 6,
        },
    },
    "sam3_lite_text_geometry_encoder": {
        "defaults": {"hidden_size": 256, "intermediate_size": 2048, "num_attention_heads": 8}
    },
    "sam3_lite_text_mask_decoder": {"defaults": {"hidden_size": 256, "num_attention_heads": 8}},
    "sam3_lite_text_text_model": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "max_position_embeddings": 77,
            "num_attention_heads": 8,
            "num_hidden_layers": 12,
            "vocab_size": 49408,
        }
    },
    "sam3_mask_decoder": {"defaults": {"hidden_size": 256, "num_attention_heads": 8}},
    "sam3_tracker": {},
    "sam3_tracker_mask_decoder": {
        "defaults": {"hidden_size": 256, "num_attention_heads": 8, "num_hidden_layers": 2}
    },
    "sam3_tracker_prompt_encoder": {"defaults": {"hidden_size": 256}},
    "sam3_tracker_video": {},
    "sam3_tracker_video_mask_decoder": {
        "defaults": {"hidden_size": 256, "num_attention_heads": 8, "num_hidden_layers": 2}
    },
    "sam3_tracker_video_prompt_encoder": {"defaults": {"hidden_size": 256}},
    "sam3_video": {},
    "sam3_vision_model": {},
    "sam3_vit_model": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4736,
            "num_attention_heads": 16,
            "num_hidden_layers": 32,
        }
    },
    "sam_hq": {"defaults": {"tie_word_embeddings": True}},
    "sam_hq_mask_decoder": {
        "defaults": {"hidden_size": 256, "num_attention_heads": 8, "num_hidden_layers": 2}
    },
    "sam_hq_prompt_encoder": {"defaults": {"hidden_size": 256}},
    "sam_hq_vision_model": {
        "defaults": {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12}
    },
    "sam_mask_decoder": {
        "defaults": {"hidden_size": 256, "num_attention_heads": 8, "num_hidden_layers": 2}
    },
    "sam_prompt_encoder": {"defaults": {"hidden_size": 256}},
    "sam_vision_model": {
        "defaults": {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12}
    },
    "sapiens2": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
        }
    },
    "sapiens2_head": {},
    "sarvam_mla": {
        "aliases": {"num_experts": "n_routed_experts", "num_local_experts": "n_routed_experts"},
        "defaults": {
            "first_k_dense_replace": 1,
            "head_dim": 64,
            "hidden_size": 4096,
            "intermediate_size": 16384,
            "kv_lora_rank": 512,
            "max_position_embeddings": 4096,
            "moe_intermediate_size": 2048,
            "n_routed_experts": 128,
            "n_shared_experts": 1,
            "num_attention_heads": 64,
            "num_hidden_layers": 32,
            "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64,
            "tie_word_embeddings": False,
            "v_head_dim": 128,
            "vocab_size": 262144,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "sarvam_moe": {
        "aliases": {"num_experts": "n_routed_experts", "num_local_experts": "n_routed_experts"},
        "defaults": {
            "first_k_dense_replace": 1,
            "head_dim": 64,
            "hidden_size": 4096,
            "intermediate_size": 8192,
            "max_position_embeddings": 131072,
            "moe_intermediate_size": 1024,
            "n_routed_experts": 128,
            "n_shared_experts": 1,
            "num_attention_heads": 64,
            "num_hidden_layers": 19,
            "num_key_value_heads": 4,
            "tie_word_embeddings": False,
            "vocab_size": 262144,
        },
    },
    "seamless_m4t": {
        "aliases": {
            "num_attention_heads": "decoder_attention_heads",
            "num_hidden_layers": "decoder_layers",
        },
        "defaults": {
            "decoder_attention_heads": 16,
            "decoder_layers": 24,
            "hidden_size": 1024,
            "max_position_embeddings": 1024,
            "tie_word_embeddings": True,
            "vocab_size": 256102,
        },
    },
    "seamless_m4t_v2": {
        "aliases": {
            "num_attention_heads": "decoder_attention_heads",
            "num_hidden_layers": "decoder_layers",
        },
        "defaults": {
            "decoder_attention_heads": 16,
            "decoder_layers": 24,
            "hidden_size": 1024,
            "max_position_embeddings": 4096,
            "tie_word_embeddings": True,
            "vocab_size": 256102,
        },
    },
    "seed_oss": {
        "defaults": {
            "head_dim": 128,
            "hidden_size": 4096,
            "intermediate_size": 27648,
            "max_position_embeddings": 524288,
            "num_attention_heads": 80,
            "num_hidden_layers": 64,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 155136,
        }
    },
    "segformer": {
        "aliases": {"num_hidden_layers": "num_encoder_blocks"},
        "defaults": {"num_attention_heads": [1, 2, 5, 8], "num_encoder_blocks": 4},
    },
    "seggpt": {
        "defaults": {"hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 24}
    },
    "sew": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 32,
        }
    },
    "sew-d": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 32,
        }
    },
    "shieldgemma2": {"defaults": {"tie_word_embeddings": True}},
    "siglip": {"text": "siglip_text_model"},
    "siglip2": {"text": "siglip2_text_model"},
    "siglip2_text_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 64,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 32000,
        }
    },
    "siglip2_vision_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "siglip_text_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 64,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 32000,
        }
    },
    "siglip_vision_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "slanet": {"defaults": {"hidden_size": 256}},
    "slanext": {"defaults": {"hidden_size": 512}},
    "slanext_vision": {
        "defaults": {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12}
    },
    "smollm3": {
        "defaults": {
            "hidden_size": 2048,
            "intermediate_size": 11008,
            "max_position_embeddings": 32768,
            "num_attention_heads": 16,
            "num_hidden_layers": 36,
            "num_key_value_heads": 4,
            "tie_word_embeddings": True,
            "vocab_size": 128256,
        }
    },
    "smolvlm": {"defaults": {"tie_word_embeddings": False}},
    "smolvlm_vision": {
        "defaults": {
            "hidden_size": 1152,
            "intermediate_size": 3072,
            "num_attention_heads": 16,
            "num_hidden_layers": 12,
        }
    },
    "solar_open": {
        "aliases": {"num_local_experts": "n_routed_experts"},
        "defaults": {
            "head_dim": 128,
            "hidden_size": 4096,
            "max_position_embeddings": 131072,
            "moe_intermediate_size": 1280,
            "n_routed_experts": 128,
            "n_shared_experts": 1,
            "num_attention_heads": 64,
            "num_hidden_layers": 48,
            "num_key_value_heads": 8,
            "tie_word_embeddings": False,
            "vocab_size": 196608,
        },
    },
    "speech-encoder-decoder": {},
    "speech_to_text": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "d_model": 256,
            "encoder_attention_heads": 4,
            "encoder_layers": 12,
            "max_target_positions": 1024,
            "tie_word_embeddings": True,
            "vocab_size": 10000,
        },
    },
    "speecht5": {
        "aliases": {
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {
            "encoder_attention_heads": 12,
            "encoder_layers": 12,
            "hidden_size": 768,
            "tie_word_embeddings": True,
            "vocab_size": 81,
        },
    },
    "speecht5_hifigan": {},
    "splinter": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 30522,
        }
    },
    "squeezebert": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "stablelm": {
        "defaults": {
            "hidden_size": 2560,
            "intermediate_size": 6912,
            "max_position_embeddings": 4096,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 32,
            "tie_word_embeddings": False,
            "vocab_size": 50304,
        }
    },
    "starcoder2": {
        "defaults": {
            "hidden_size": 3072,
            "intermediate_size": 12288,
            "max_position_embeddings": 4096,
            "num_attention_heads": 24,
            "num_hidden_layers": 30,
            "num_key_value_heads": 2,
            "tie_word_embeddings": True,
            "vocab_size": 49152,
        }
    },
    "step3p5_vision": {
        "defaults": {
            "hidden_size": 1536,
            "intermediate_size": 8960,
            "max_position_embeddings": 2704,
            "num_attention_heads": 16,
            "num_hidden_layers": 47,
        }
    },
    "step3p7": {"text": "step3p5"},
    "superglue": {"defaults": {"hidden_size": 256, "num_attention_heads": 4}},
    "superpoint": {},
    "swiftformer": {},
    "swin": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "num_layers"},
        "defaults": {"hidden_size": 768, "num_heads": [3, 6, 12, 24], "num_layers": 4},
    },
    "swin2sr": {
        "aliases": {
            "hidden_size": "embed_dim",
            "num_attention_heads": "num_heads",
            "num_hidden_layers": "num_layers",
        },
        "defaults": {"embed_dim": 180, "num_heads": [6, 6, 6, 6, 6, 6], "num_layers": 6},
    },
    "swinv2": {
        "aliases": {"num_attention_heads": "num_heads", "num_hidden_layers": "num_layers"},
        "defaults": {"hidden_size": 768, "num_heads": [3, 6, 12, 24], "num_layers": 4},
    },
    "switch_transformers": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "num_heads",
            "num_hidden_layers": "num_layers",
        },
        "defaults": {
            "d_model": 768,
            "decoder_sparse_step": 4,
            "num_experts": 8,
            "num_heads": 12,
            "num_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 32128,
        },
    },
    "t5": {
        "aliases": {
            "head_dim": "d_kv",
            "hidden_size": "d_model",
            "num_attention_heads": "num_heads",
            "num_hidden_layers": "num_layers",
        },
        "defaults": {
            "d_kv": 64,
            "d_model": 512,
            "num_heads": 8,
            "num_layers": 6,
            "tie_word_embeddings": True,
            "vocab_size": 32128,
        },
    },
    "t5_gemma_module": {
        "defaults": {
            "head_dim": 256,
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "max_position_embeddings": 8192,
            "num_attention_heads": 8,
            "num_hidden_layers": 26,
            "num_key_value_heads": 4,
            "tie_word_embeddings": True,
            "vocab_size": 256000,
        }
    },
    "t5gemma": {"defaults": {"tie_word_embeddings": True, "vocab_size": 256000}},
    "t5gemma2": {"defaults": {"tie_word_embeddings": True, "vocab_size": 262208}},
    "t5gemma2_decoder": {
        "defaults": {
            "head_dim": 256,
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "max_position_embeddings": 131072,
            "num_attention_heads": 8,
            "num_hidden_layers": 26,
            "num_key_value_heads": 4,
            "tie_word_embeddings": True,
            "vocab_size": 262208,
        }
    },
    "t5gemma2_encoder": {"defaults": {"tie_word_embeddings": True}, "text": "t5gemma2_text"},
    "t5gemma2_text": {
        "defaults": {
            "head_dim": 256,
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "max_position_embeddings": 131072,
            "num_attention_heads": 8,
            "num_hidden_layers": 26,
            "num_key_value_heads": 4,
            "tie_word_embeddings": True,
            "vocab_size": 262208,
        }
    },
    "table-transformer": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {"d_model": 256, "encoder_attention_heads": 8, "encoder_layers": 6},
    },
    "tapas": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 1024,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "textnet": {},
    "time_series_transformer": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
        },
        "defaults": {"d_model": 64, "encoder_attention_heads": 2, "encoder_layers": 2},
    },
    "timesfm": {
        "defaults": {
            "head_dim": 80,
            "hidden_size": 1280,
            "intermediate_size": 1280,
            "num_attention_heads": 16,
            "num_hidden_layers": 50,
        }
    },
    "timesfm2_5": {
        "defaults": {
            "head_dim": 80,
            "hidden_size": 1280,
            "intermediate_size": 1280,
            "max_position_embeddings": 16384,
            "num_attention_heads": 16,
            "num_hidden_layers": 20,
            "num_key_value_heads": 16,
        }
    },
    "timesformer": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "timm_backbone": {},
    "timm_wrapper": {},
    "tipsv2": {"text": "tipsv2_text_model"},
    "tipsv2_dpt": {},
    "tipsv2_text_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 64,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 32000,
        }
    },
    "tipsv2_vision_model": {
        "defaults": {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12}
    },
    "trocr": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "decoder_attention_heads",
            "num_hidden_layers": "decoder_layers",
        },
        "defaults": {
            "d_model": 1024,
            "decoder_attention_heads": 16,
            "decoder_layers": 12,
            "max_position_embeddings": 512,
            "tie_word_embeddings": True,
            "vocab_size": 50265,
        },
    },
    "tvp": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 30522,
        }
    },
    "udop": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "num_heads",
            "num_hidden_layers": "num_layers",
        },
        "defaults": {
            "d_model": 1024,
            "num_heads": 16,
            "num_layers": 24,
            "tie_word_embeddings": True,
            "vocab_size": 33201,
        },
    },
    "ultrabert": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_position_embeddings": 32768,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "vocab_size": 32000,
        },
        "derived": {
            "head_dim": "hidden_size // num_attention_heads",
            "num_key_value_heads": "=num_attention_heads",
        },
    },
    "umt5": {
        "aliases": {
            "head_dim": "d_kv",
            "hidden_size": "d_model",
            "num_attention_heads": "num_heads",
            "num_hidden_layers": "num_layers",
        },
        "defaults": {
            "d_kv": 64,
            "d_model": 512,
            "num_heads": 6,
            "num_layers": 8,
            "tie_word_embeddings": True,
            "vocab_size": 250112,
        },
    },
    "unispeech": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 32,
        }
    },
    "unispeech-sat": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 32,
        }
    },
    "univnet": {},
    "unlimited_ocr_sam_vision_model": {
        "defaults": {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12}
    },
    "unlimited_ocr_text": {
        "aliases": {"num_experts": "n_routed_experts"},
        "defaults": {
            "hidden_size": 1280,
            "intermediate_size": 6848,
            "max_position_embeddings": 32768,
            "moe_intermediate_size": 896,
            "n_routed_experts": 64,
            "n_shared_experts": 2,
            "num_attention_heads": 10,
            "num_hidden_layers": 12,
            "num_key_value_heads": 10,
            "tie_word_embeddings": False,
            "vocab_size": 129280,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "unlimited_ocr_vision": {},
    "unlimited_ocr_vision_encoder": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
        }
    },
    "upernet": {"defaults": {"hidden_size": 512}},
    "uvdoc": {},
    "uvdoc_backbone": {},
    "vaultgemma": {
        "defaults": {
            "head_dim": 256,
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "max_position_embeddings": 8192,
            "num_attention_heads": 8,
            "num_hidden_layers": 26,
            "num_key_value_heads": 4,
            "tie_word_embeddings": True,
            "vocab_size": 256000,
        }
    },
    "vibevoice": {"defaults": {"tie_word_embeddings": False, "vocab_size": 151936}},
    "vibevoice_acoustic_tokenizer": {"defaults": {"hidden_size": 64}},
    "vibevoice_acoustic_tokenizer_decoder": {"defaults": {"hidden_size": 64}},
    "vibevoice_acoustic_tokenizer_encoder": {"defaults": {"hidden_size": 64}},
    "vibevoice_asr": {"defaults": {"max_position_embeddings": 450}},
    "vibevoice_diffusion": {
        "defaults": {"hidden_size": 1536, "intermediate_size": 4608, "num_hidden_layers": 4}
    },
    "video_llama_3": {"defaults": {"tie_word_embeddings": False}},
    "video_llama_3_vision": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "video_llava": {"defaults": {"tie_word_embeddings": False}},
    "videomae": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "videomt": {
        "defaults": {"hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 24}
    },
    "videoprism": {"text": "videoprism_text_model"},
    "videoprism_text_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 64,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 32000,
        }
    },
    "videoprism_vision_model": {
        "defaults": {"hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12}
    },
    "vilt": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 40,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "vipllava": {"defaults": {"tie_word_embeddings": False}},
    "vision-encoder-decoder": {},
    "vision-text-dual-encoder": {},
    "visual_bert": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "vit": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "vit_mae": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "vit_msn": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "vitdet": {
        "defaults": {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12}
    },
    "vitmatte": {"defaults": {"hidden_size": 384}},
    "vitpose": {},
    "vitpose_backbone": {
        "defaults": {
            "hidden_size": 768,
            "num_attention_heads": 12,
            "num_experts": 1,
            "num_hidden_layers": 12,
        }
    },
    "vits": {
        "defaults": {
            "hidden_size": 192,
            "num_attention_heads": 2,
            "num_hidden_layers": 6,
            "vocab_size": 38,
        }
    },
    "vivit": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "vjepa2": {
        "defaults": {"hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 24}
    },
    "voxtral": {"defaults": {"hidden_size": 3072}},
    "voxtral_encoder": {
        "defaults": {
            "hidden_size": 1280,
            "intermediate_size": 5120,
            "num_attention_heads": 20,
            "num_hidden_layers": 32,
            "vocab_size": 51866,
        }
    },
    "voxtral_realtime": {"defaults": {"hidden_size": 3072, "tie_word_embeddings": True}},
    "voxtral_realtime_encoder": {
        "aliases": {"num_key_value_heads": "num_attention_heads"},
        "defaults": {
            "head_dim": 64,
            "hidden_size": 1280,
            "intermediate_size": 5120,
            "max_position_embeddings": 1500,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "vocab_size": 131072,
        },
    },
    "voxtral_realtime_text": {
        "defaults": {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "max_position_embeddings": 131072,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "num_key_value_heads": 8,
            "vocab_size": 32000,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "wav2vec2": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 32,
        }
    },
    "wav2vec2-bert": {
        "defaults": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "num_attention_heads": 16,
            "num_hidden_layers": 24,
        }
    },
    "wav2vec2-conformer": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "wavlm": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "vocab_size": 32,
        }
    },
    "wavtokenizer": {"defaults": {"hidden_size": 512}},
    "wavtokenizer_encoder": {"defaults": {"hidden_size": 512}},
    "whisper": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "encoder_attention_heads",
            "num_hidden_layers": "encoder_layers",
            "num_key_value_heads": "encoder_attention_heads",
        },
        "defaults": {
            "d_model": 384,
            "encoder_attention_heads": 6,
            "encoder_layers": 4,
            "max_target_positions": 448,
            "tie_word_embeddings": True,
            "vocab_size": 51865,
        },
    },
    "xclip": {"text": "xclip_text_model"},
    "xclip_text_model": {
        "defaults": {
            "hidden_size": 512,
            "intermediate_size": 2048,
            "max_position_embeddings": 77,
            "num_attention_heads": 8,
            "num_hidden_layers": 12,
            "vocab_size": 49408,
        }
    },
    "xclip_vision_model": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "xcodec": {"defaults": {"hidden_size": 1024}},
    "xcodec2": {
        "defaults": {
            "head_dim": 64,
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "max_position_embeddings": 4096,
            "num_attention_heads": 16,
            "num_hidden_layers": 12,
            "num_key_value_heads": 16,
            "tie_word_embeddings": False,
        }
    },
    "xglm": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "attention_heads",
            "num_hidden_layers": "num_layers",
        },
        "defaults": {
            "attention_heads": 16,
            "d_model": 1024,
            "max_position_embeddings": 2048,
            "num_layers": 24,
            "tie_word_embeddings": True,
            "vocab_size": 256008,
        },
    },
    "xlm": {
        "aliases": {
            "hidden_size": "emb_dim",
            "num_attention_heads": "n_heads",
            "num_hidden_layers": "n_layers",
        },
        "defaults": {
            "emb_dim": 2048,
            "max_position_embeddings": 512,
            "n_heads": 16,
            "n_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30145,
        },
    },
    "xlm-roberta": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "xlm-roberta-xl": {
        "defaults": {
            "hidden_size": 2560,
            "intermediate_size": 10240,
            "max_position_embeddings": 514,
            "num_attention_heads": 32,
            "num_hidden_layers": 36,
            "tie_word_embeddings": True,
            "vocab_size": 250880,
        }
    },
    "xlnet": {
        "aliases": {
            "hidden_size": "d_model",
            "num_attention_heads": "n_head",
            "num_hidden_layers": "n_layer",
        },
        "defaults": {
            "d_model": 1024,
            "max_position_embeddings": -1,
            "n_head": 16,
            "n_layer": 24,
            "tie_word_embeddings": True,
            "vocab_size": 32000,
        },
    },
    "xlstm": {
        "defaults": {
            "hidden_size": 4096,
            "num_heads": 8,
            "num_hidden_layers": 32,
            "tie_word_embeddings": False,
            "v_head_dim": 512,
            "vocab_size": 50304,
        }
    },
    "xmod": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 30522,
        }
    },
    "yolos": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
        }
    },
    "yoso": {
        "defaults": {
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 4096,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "tie_word_embeddings": True,
            "vocab_size": 50265,
        }
    },
    "youtu": {
        "defaults": {
            "hidden_size": 2048,
            "intermediate_size": 6144,
            "kv_lora_rank": 512,
            "max_position_embeddings": 131072,
            "num_attention_heads": 16,
            "num_hidden_layers": 32,
            "num_key_value_heads": 16,
            "q_lora_rank": 1536,
            "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64,
            "tie_word_embeddings": True,
            "v_head_dim": 128,
            "vocab_size": 128256,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "zamba": {
        "aliases": {"head_dim": "attention_head_dim"},
        "defaults": {
            "attention_head_dim": 464,
            "hidden_size": 3712,
            "intermediate_size": 14848,
            "max_position_embeddings": 4096,
            "n_mamba_heads": 2,
            "num_attention_heads": 16,
            "num_hidden_layers": 76,
            "num_key_value_heads": 16,
            "tie_word_embeddings": True,
            "vocab_size": 32000,
        },
    },
    "zamba2": {
        "aliases": {"head_dim": "attention_head_dim"},
        "defaults": {
            "attention_head_dim": 160,
            "hidden_size": 2560,
            "intermediate_size": 10240,
            "mamba_ngroups": 1,
            "max_position_embeddings": 4096,
            "n_mamba_heads": 8,
            "num_attention_heads": 32,
            "num_hidden_layers": 54,
            "tie_word_embeddings": True,
            "vocab_size": 32000,
        },
        "derived": {"num_key_value_heads": "=num_attention_heads"},
    },
    "zaya": {
        "defaults": {
            "hidden_size": 2048,
            "max_position_embeddings": 131072,
            "moe_intermediate_size": 2048,
            "num_attention_heads": 8,
            "num_experts": 16,
            "num_hidden_layers": 40,
            "num_key_value_heads": 2,
            "tie_word_embeddings": True,
            "vocab_size": 262272,
        },
        "derived": {"head_dim": "hidden_size // num_attention_heads"},
    },
    "zoedepth": {},
}
