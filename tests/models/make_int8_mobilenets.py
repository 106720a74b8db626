"""How ``mobilenet_v1_025_int8.tflite`` and ``mobilenet_v2_035_int8.tflite`` were made (not run
by the tests: it needs TensorFlow, which the project does not depend on).

    python -m venv /tmp/tf && /tmp/tf/bin/pip install tensorflow-cpu==2.21.0
    /tmp/tf/bin/python tests/models/make_int8_mobilenets.py tests/models

Keras' own MobileNet v1 (alpha 0.25, 128×128) and MobileNetV2 (alpha 0.35, 96×96) with seeded
random weights (no download: ``weights=None``). Random convolution weights and Keras' default
batch-norm statistics would not look like a trained net's activations, so each batch norm's
moving mean and variance are set, in graph order, to the statistics of its input on a batch of
random images, with random gamma and beta: every layer's output then has a trained net's spread
and the int8 calibration below uses its range. Full-integer post-training quantization with
TFLite's converter (per-channel int8 weights, int8 activations, int32 biases), calibrated on
seeded random inputs in [-1, 1]: v1 with int8 input and output (as the classic quantized
MobileNets), v2 with float input and output (QUANTIZE / DEQUANTIZE at the ends, the converter's
default).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def _calibrate_batch_norms(model, images, rng) -> None:
    import keras

    for layer in model.layers:
        if not isinstance(layer, keras.layers.BatchNormalization):
            continue
        probe = keras.Model(model.inputs, layer.input)
        x = np.asarray(probe(images, training=False))
        axes = tuple(range(x.ndim - 1))
        mean, var = x.mean(axis=axes), x.var(axis=axes) + 1e-3
        channels = mean.shape[0]
        gamma = rng.uniform(0.6, 1.4, channels).astype(np.float32)
        beta = rng.uniform(-0.3, 0.6, channels).astype(np.float32)
        layer.set_weights([gamma, beta, mean.astype(np.float32), var.astype(np.float32)])


def _convert(model, shape, int8_io: bool, seed: int) -> bytes:
    import tensorflow as tf

    def representative():
        rng = np.random.default_rng(seed + 1)
        for _ in range(32):
            yield [rng.uniform(-1, 1, (1, *shape)).astype(np.float32)]

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    if int8_io:
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    return converter.convert()


def make(out_dir: Path) -> None:
    import keras

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    specs = [
        ("mobilenet_v1_025_int8.tflite", keras.applications.MobileNet, 0.25, (128, 128, 3), True),
        ("mobilenet_v2_035_int8.tflite", keras.applications.MobileNetV2, 0.35, (96, 96, 3), False),
    ]
    for name, arch, alpha, shape, int8_io in specs:
        # A fixed batch of 1: Keras' Reshape of the classifier would otherwise read the batch
        # size with a SHAPE operator, which TVM's TFLite importer cannot import quantized.
        inp = keras.Input(batch_shape=(1, *shape))
        model = arch(input_tensor=inp, alpha=alpha, weights=None, classes=1000)
        images = rng.uniform(-1, 1, (16, *shape)).astype(np.float32)
        _calibrate_batch_norms(model, images, rng)
        (out_dir / name).write_bytes(_convert(model, shape, int8_io, seed=0))
        print(name, (out_dir / name).stat().st_size)


if __name__ == "__main__":
    make(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
