tile.func @bad() {
  %r = tile.range 0, 100 : tensor<100xi32>
  tile.return
}
