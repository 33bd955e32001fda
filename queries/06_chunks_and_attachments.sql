-- The file's chunk index, attachments and metadata records.
SELECT compression, count(*) AS chunks, sum(message_count) AS messages,
       sum(compressed_size) AS compressed, sum(uncompressed_size) AS uncompressed
FROM chunks('tests/data/demo.mcap')
GROUP BY compression;

SELECT name, media_type, data_size FROM attachments('tests/data/demo.mcap');

SELECT name, metadata FROM metadata('tests/data/demo.mcap');
