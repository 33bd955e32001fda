-- What is in the file? Answered from the summary alone: no chunk is read.
SELECT topic, message_type, message_encoding, message_count
FROM topics('tests/data/demo.mcap')
ORDER BY topic;
