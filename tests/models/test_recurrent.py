import torch
from torch import nn

from models.attention import padding_mask
from models.lstm import LSTMCell, LSTMEncoder
from models.rnn import ElmanCell, RNNEncoder


def test_lstm_cell_equals_torch_lstm_cell():
    torch.manual_seed(0)
    mine, ref = LSTMCell(6, 10), nn.LSTMCell(6, 10)
    with torch.no_grad():
        ref.weight_ih.copy_(mine.W.weight)
        ref.bias_ih.copy_(mine.W.bias)
        ref.weight_hh.copy_(mine.U.weight)
        ref.bias_hh.copy_(mine.U.bias)
    x, h, c = torch.randn(3, 6), torch.randn(3, 10), torch.randn(3, 10)
    out = mine(x, (h, c))
    ref_h, ref_c = ref(x, (h, c))
    torch.testing.assert_close(out.h, ref_h, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.c, ref_c, atol=1e-5, rtol=1e-5)
    assert out.gates.shape == (3, 3, 10)
    assert torch.all((out.gates > 0) & (out.gates < 1))  # sigmoid gates


def test_lstm_encoder_equals_torch_lstm_and_stops_at_padding():
    torch.manual_seed(1)
    enc, ref = LSTMEncoder(5, 7), nn.LSTM(5, 7, batch_first=True)
    with torch.no_grad():
        ref.weight_ih_l0.copy_(enc.cell.W.weight)
        ref.bias_ih_l0.copy_(enc.cell.W.bias)
        ref.weight_hh_l0.copy_(enc.cell.U.weight)
        ref.bias_hh_l0.copy_(enc.cell.U.bias)
    x = torch.randn(2, 6, 5)
    out = enc(x, padding_mask(torch.tensor([6, 4]), 6))
    ref_out, (ref_h, ref_c) = ref(x)
    torch.testing.assert_close(out.hidden[0], ref_out[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.final[0][0], ref_h[0, 0], atol=1e-5, rtol=1e-5)
    # the padded sentence's final state is the state after its 4th token
    _, (h4, c4) = ref(x[1:, :4])
    torch.testing.assert_close(out.final[0][1], h4[0, 0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.final[1][1], c4[0, 0], atol=1e-5, rtol=1e-5)
    assert out.gates.shape == (2, 6, 3, 7) and out.cell.shape == (2, 6, 7)


def test_elman_cell_is_the_equation_and_equals_torch_rnn_cell():
    torch.manual_seed(2)
    cell = ElmanCell(4, 3)
    x, h = torch.randn(2, 4), torch.randn(2, 3)
    W, b = cell.W.weight, cell.W.bias
    torch.testing.assert_close(cell(x, h), torch.tanh(torch.cat([x, h], -1) @ W.T + b))
    ref = nn.RNNCell(4, 3)
    with torch.no_grad():
        ref.weight_ih.copy_(W[:, :4])
        ref.weight_hh.copy_(W[:, 4:])
        ref.bias_ih.copy_(b)
        ref.bias_hh.zero_()
    torch.testing.assert_close(cell(x, h), ref(x, h), atol=1e-6, rtol=1e-5)


def test_rnn_encoder_shapes_and_final_state_at_last_real_token():
    torch.manual_seed(3)
    enc = RNNEncoder(4, 3)
    x = torch.randn(2, 5, 4)
    out = enc(x, padding_mask(torch.tensor([5, 2]), 5))
    assert out.hidden.shape == (2, 5, 3) and out.final.shape == (2, 3)
    torch.testing.assert_close(out.final[1], out.hidden[1, 1])
    torch.testing.assert_close(out.final[0], out.hidden[0, 4])
