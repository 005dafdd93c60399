"""The model view's mosaic (explorer/analysis/mosaic.py) against loops: tiles, gaps, block means."""

import numpy as np

from explorer.analysis.mosaic import attention_mosaic, block_average


def loop_block_mean(matrix, block):
    out = np.zeros((-(-matrix.shape[0] // block), -(-matrix.shape[1] // block)))
    for r in range(out.shape[0]):
        for c in range(out.shape[1]):
            cells = [matrix[i, j] for i in range(r * block, min((r + 1) * block, matrix.shape[0]))
                     for j in range(c * block, min((c + 1) * block, matrix.shape[1]))]
            out[r, c] = sum(cells) / len(cells)
    return out


def test_256_tokens_become_64_blocks_of_4_and_rows_still_sum_to_one():
    rng = np.random.default_rng(0)
    maps = rng.random((2, 256, 256)).astype(np.float32)
    maps /= maps.sum(axis=-1, keepdims=True)
    averaged = block_average(maps)
    assert averaged.shape == (2, 64, 64)
    np.testing.assert_allclose(averaged[1], loop_block_mean(maps[1].astype(np.float64), 4), rtol=1e-5)
    # a tile row: 64 means of 4 x 4 cells = (4 rows summing to 1) / 16 = 1/4
    np.testing.assert_allclose(averaged.sum(axis=-1) * 4, 1.0, rtol=1e-4)


def test_small_maps_are_kept_exactly_and_gaps_are_nan():
    weights = [np.arange(2 * 3 * 5, dtype=np.float32).reshape(2, 3, 5) + 100 * i for i in range(3)]
    mosaic = attention_mosaic(weights, [0, 1, 2])
    assert mosaic.image.shape == (3 * 4 - 1, 2 * 6 - 1) and not mosaic.downsampled()
    for layer in range(3):
        for head in range(2):
            np.testing.assert_array_equal(mosaic.tile(layer, head), weights[layer][head])
    assert np.isnan(mosaic.image[3]).all() and np.isnan(mosaic.image[:, 5]).all()
    assert mosaic.cell_at(4 + 2, 6 + 4) == (1, 1, range(2, 3), range(4, 5))
    assert mosaic.cell_at(3, 0) is None and mosaic.cell_at(0, 5) is None and mosaic.cell_at(11, 0) is None
